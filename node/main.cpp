// The floodgate executable: flags and config, then one Node (node.hpp) until a signal or
// SHUTDOWN stops it.
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <caf/all.hpp>
#include <csignal>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>

#include "build_info.hpp"
#include "command_table.hpp"
#include "config.hpp"
#include "node.hpp"
#include "rls_config.hpp"
#include "settings.hpp"

namespace {

constexpr int kStopDeadlineS = 60;  // a stop that takes longer ends the process anyway
// The value after `flag` ("--config FILE" or "--config=FILE"), read before the flags are
// parsed: the file gives the base the flags then override.
std::string pre_scan(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == flag && i + 1 < argc) return argv[i + 1];
    if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // Client buffers of a MB and more come and go with connections. A fixed mmap threshold
  // keeps them out of the heap (glibc would otherwise raise it after the first free and
  // keep that memory), so what a burst of big or half-sent commands took comes back.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  fg::NodeConfig cfg;
  // Settings: defaults, then the file, then flags given on the command line.
  const std::string check_file = pre_scan(argc, argv, "--check-config");
  const std::string config_file =
      check_file.empty() ? pre_scan(argc, argv, "--config") : check_file;
  try {
    if (!config_file.empty()) fg::load_config_file(config_file, cfg);
  } catch (const fg::ConfigError& e) {
    std::cerr << "floodgate: bad config: " << e.what() << "\n";
    return 2;
  }
  CLI::App app{"floodgate: a rate-limiter node that speaks the Redis protocol (RESP)"};
  app.set_version_flag("--version", std::string("floodgate ") + FLOODGATE_VERSION +
                                        " (commit " FLOODGATE_COMMIT ")");
  std::string unused_file;
  app.add_option("--config", unused_file, "YAML config file (settings and named policies)");
  app.add_option("--check-config", unused_file,
                 "Validate this config file (with the flags given) and exit: 0 good, 2 bad");
  // Every setting's flag, from the settings table (settings.hpp).
  const fg::NodeConfig defaults;
  for (const fg::Setting& st : fg::settings()) {
    auto apply = [&cfg, &st](const std::string& v) {
      if (const fg::Status r = st.set(cfg, v); !r) throw CLI::ValidationError(st.flag, r.error());
    };
    if (st.presence) {
      app.add_flag_callback(
          st.flag, [apply] { apply("yes"); }, st.help);
    } else if (st.list) {
      app.add_option_function<std::vector<std::string>>(
             st.flag,
             [&cfg, &st, apply](const std::vector<std::string>& vs) {
               if (st.clear) st.clear(cfg);
               for (const std::string& v : vs) apply(v);
             },
             st.help)
          ->type_name(st.type);
    } else {
      CLI::Option* o = app.add_option_function<std::string>(st.flag, apply, st.help);
      // (its range with its type: "INT [-1..9223372036854775807]", "DURATION [1ms..1000ms]")
      const char* unit = std::string_view(st.type) == "DURATION" ? "ms" : "";
      o->type_name(st.ranged ? std::string(st.type) + " [" + std::to_string(st.lo) + unit + ".." +
                                   std::to_string(st.hi) + unit + "]"
                             : std::string(st.type));
      // (a default of -1 is counted from the RESP port, as the help line says)
      const std::string d = st.get ? st.get(defaults) : "";
      if (!d.empty() && d[0] != '-') o->default_str(d);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ValidationError& e) {  // a setting's value: as the file's errors
    std::cerr << "floodgate: " << e.what() << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    // (--help and --version end here with 0; a bad flag is a bad config: 2, as with a file)
    return app.exit(e) == 0 ? 0 : 2;
  }

  const std::string bind_host = fg::first_bind_address(cfg.bind);
  if (cfg.cluster_enabled && (bind_host == "0.0.0.0" || bind_host == "::") &&
      cfg.cluster_announce_host.empty()) {
    std::cerr << "floodgate: binding " << bind_host
              << " needs --cluster-announce-host (the address peers and clients use)\n";
    return 2;
  }
  if (!cfg.users.empty() && !cfg.aclfile.empty()) {
    std::cerr << "floodgate: users (--user) and aclfile cannot both be set\n";
    return 2;
  }
  if (!check_file.empty()) {
    fg::AclBook acl(fg::acl_catalog(), fg::SystemClock::process());  // (the node loads its own)
    if (const fg::Status r = fg::load_users(cfg, acl); !r) {
      std::cerr << "floodgate: " << r.error() << "\n";
      return 2;
    }
    if (!cfg.rls_config.empty()) {  // (the gateway door's files too)
      fg::RlsStatsBook book;
      if (auto rules = fg::load_rls_config(cfg.rls_config, book); !rules) {
        std::cerr << "floodgate: rls-config: " << rules.error() << "\n";
        return 2;
      }
    }
    if (cfg.tls.configured() || cfg.tls_port > 0 || cfg.tls_native || cfg.tls_cluster ||
        cfg.tls_rls) {
      fg::TlsContexts probe;  // (the certificate files are part of what is checked)
      if (const fg::Status st = probe.load(cfg.tls); !st) {
        std::cerr << "floodgate: " << st.error() << "\n";
        return 2;
      }
    }
    std::cout << "floodgate: " << check_file << " is a valid config (" << cfg.policies.size()
              << " policies, " << cfg.patterns.size() << " key patterns, " << cfg.overrides.size()
              << " overrides, " << acl.users().size() << " users)\n";
    return 0;
  }
  fg::resolve_defaults(cfg);
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));

  // Shard actors run on CAF's scheduler; keep idle workers from spinning on a shared box.
  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.max-threads", static_cast<size_t>(cfg.shard_threads));
  // Batches run in place on the I/O threads whenever a shard is idle, so a shard thread
  // mostly waits: after a short spin it sleeps until a message wakes it (CAF notifies a
  // sleeping worker), never in 50 us naps, and wakes on its own only to look for work to
  // steal.
  caf_cfg.set("work-stealing.moderate-poll-attempts", static_cast<size_t>(0));
  caf_cfg.set("work-stealing.relaxed-sleep-duration",
              caf::timespan{std::chrono::milliseconds(100)});
  caf_cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{caf_cfg};

  // SIGHUP reloads; SIGINT, SIGTERM and SHUTDOWN stop the node: it saves, hands its slots
  // over, closes and the process exits 0. (Signals that come while it starts wait here.)
  asio::io_context signal_io;
  asio::signal_set hangup(signal_io, SIGHUP);
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  std::signal(SIGPIPE, SIG_IGN);
  fg::Node node(std::move(cfg), system);
  std::string why;
  if (const int code = node.start(why); code != 0) {
    std::cerr << "floodgate: " << why << "\n";
    return code;
  }
  std::function<void()> on_hangup = [&] {
    hangup.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      node.reload();
      on_hangup();
    });
  };
  on_hangup();
  signals.async_wait([&](const asio::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {} received, shutting down", sig);
    node.request_stop();
  });
  while (!node.stop_requested()) signal_io.run_for(std::chrono::milliseconds(50));
  // A node whose shard is stuck (a C call no budget can stop) could never finish stopping:
  // past the deadline, or at a second signal, the process ends at once.
  // A leaving node that holds the only reachable copy of some slots is not stuck: it waits
  // for a member to take them, as long as that takes (a second signal ends it anyway).
  std::thread([&node] {
    std::this_thread::sleep_for(std::chrono::seconds(kStopDeadlineS));
    while (node.leave_last_copies() > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    spdlog::error("still stopping after {} s: exiting now", kStopDeadlineS);
    std::_Exit(1);
  }).detach();
  signals.async_wait([&node](const asio::error_code& ec, int sig) {
    if (ec) return;
    if (const size_t last = node.leave_last_copies(); last > 0) {
      spdlog::error(
          "signal {} received while leaving: exiting now; the only reachable copy of {} slots "
          "goes with this process (a node that saves has them in the file it saved at the stop)",
          sig, last);
    } else {
      spdlog::error("signal {} received while stopping: exiting now", sig);
    }
    std::_Exit(1);
  });
  std::thread second([&signal_io] { signal_io.run(); });
  node.stop();
  signal_io.stop();
  second.join();
  return 0;
}
