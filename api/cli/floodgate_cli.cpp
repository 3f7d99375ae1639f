// floodgate-cli: the native client from a shell. One request per invocation (take, peek,
// reset, acquire, release, renew, heartbeat, count, cluster), a load generator (bench), or
// a live view of the cluster from a node's admin port (top).
// Exit status: 0 allowed / done, 1 denied, 2 error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "build_info.hpp"
#include "calendar.hpp"
#include "errors.hpp"
#include "floodgate/client.hpp"
#include "limit_spec.hpp"
#include "top.hpp"

namespace {

using floodgate::Limit;
using Ms = std::chrono::milliseconds;

// "free" (a policy) or "<kind> <params...>" as FG.TAKE takes them (durations in ms), read
// by the same parser the node reads FG.TAKE's arguments with.
fg::Result<Limit> parse_limit(const std::vector<std::string>& w) {
  if (w.empty()) return fg::Error{"a limit is needed: a policy name or <kind> <params...>"};
  if (fg::kind_from_name(w[0]) == fg::Kind::kNone) {
    if (w.size() != 1) return fg::Error{std::string(fg::err::reason(fg::err::kLimitNeedsKind))};
    return Limit::policy(w[0]);
  }
  const std::vector<std::string_view> words(w.begin(), w.end());
  size_t i = 0;
  fg::Result<fg::LimitSpec> spec = fg::parse_limit_words(words, i);
  if (spec.ok() && i != words.size()) spec = fg::Error{fg::err::kSyntax};
  if (!spec.ok()) return fg::Error{std::string(fg::err::reason(spec.error()))};
  Limit l;
  l.kind = static_cast<Limit::Kind>(spec->kind);  // the same numbering as the native protocol's
  l.a = spec->a;
  l.b = spec->b;
  l.period_ms = spec->c / 1'000'000;
  if (spec->kind == fg::Kind::kCalendarWindow) {
    l.b = static_cast<int64_t>(fg::calendar_unit_of(spec->b));
    l.time_zone = fg::calendar_zone_name(fg::calendar_zone_of(spec->b));
    l.period_ms = 0;
  }
  return l;
}

int fail(const std::string& what) {
  std::cerr << "floodgate-cli: " << what << "\n";
  return 2;
}

template <class T>
bool check(const floodgate::Result<T>& r) {
  if (r.ok()) return true;
  std::cerr << "(" << floodgate::status_name(r.status()) << ") " << r.error() << "\n";
  return false;
}

void print(const floodgate::Decision& d) {
  std::printf("%s limit=%" PRId64 " remaining=%" PRId64 " retry_after_ms=%" PRId64
              " reset_after_ms=%" PRId64 "%s%s\n",
              d.allowed ? "allowed" : "denied", d.limit, d.remaining, d.retry_after_ms,
              d.reset_after_ms, d.unavailable.empty() ? "" : " ", d.unavailable.c_str());
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

bool parse_hex(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 16) return false;
  char* end = nullptr;
  v = std::strtoull(s.c_str(), &end, 16);
  return *end == '\0' && v != 0;
}

// Latencies in a log-linear histogram: 1 µs resolution below 1 ms, about 1.6% above.
class Histogram {
 public:
  void add(int64_t us) {
    if (us < 0) us = 0;
    ++buckets_[index(us)];
    ++n_;
  }
  void merge(const Histogram& o) {
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    n_ += o.n_;
  }
  int64_t percentile(double p) const {
    if (n_ == 0) return 0;
    const uint64_t want = static_cast<uint64_t>(p * static_cast<double>(n_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= want) return upper(i);
    }
    return upper(buckets_.size() - 1);
  }
  uint64_t count() const { return n_; }

 private:
  static constexpr int kSub = 64;
  static size_t index(int64_t us) {
    if (us < 1024) return static_cast<size_t>(us);
    const int lg = 63 - __builtin_clzll(static_cast<uint64_t>(us));  // >= 10
    const int64_t sub = (us >> (lg - 6)) & (kSub - 1);
    const size_t i = 1024 + static_cast<size_t>((lg - 10) * kSub + sub);
    return std::min(i, kSize - 1);
  }
  static int64_t upper(size_t i) {
    if (i < 1024) return static_cast<int64_t>(i);
    const int lg = static_cast<int>((i - 1024) / kSub) + 10;
    const int64_t sub = static_cast<int64_t>((i - 1024) % kSub);
    return ((kSub + sub + 1) << (lg - 6)) - 1;
  }
  static constexpr size_t kSize = 1024 + 30 * kSub;
  std::vector<uint64_t> buckets_ = std::vector<uint64_t>(kSize, 0);
  uint64_t n_ = 0;
};

struct BenchOptions {
  int connections = 2;
  int pipeline = 2048;  // requests outstanding per connection
  double duration_s = 10;
  int64_t keys = 100000;
  std::vector<std::string> limit{"gcra", "100", "100", "60000"};  // = CL.THROTTLE k 100 100 60
  std::string op = "take";
  bool quiet = false;
};

int bench(floodgate::Client::Options copt, const BenchOptions& b) {
  const fg::Result<Limit> parsed = parse_limit(b.limit);
  if (!parsed.ok()) return fail(parsed.error());
  const Limit limit = parsed.value();
  if (b.connections < 1 || b.pipeline < 1 || b.duration_s <= 0 || b.keys < 1) {
    return fail("bench: connections, pipeline, duration and keys must be positive");
  }
  copt.connections_per_node = b.connections;
  using Clock = std::chrono::steady_clock;
  // The counters are written only where callbacks run, the client's I/O thread (one
  // writer: a plain store, no locked instruction per request), and read here.
  struct Shared {
    std::atomic<uint64_t> done{0}, allowed{0}, errors{0};
    std::atomic<uint64_t> ended{0};  // answered calls that issued no next one (stopping)
    std::atomic<bool> stop{false};
    Histogram hist;
    std::string first_error;
    std::function<void()> next;
  };
  const auto bump = [](std::atomic<uint64_t>& a) {
    a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  };
  auto sh = std::make_shared<Shared>();  // outlives the client: its callbacks use it
  floodgate::Client client(copt);
  auto topo = client.topology();
  if (!check(topo)) return 2;
  const bool peek = b.op == "peek";
  std::function<void()>& next = sh->next;
  next = [&client, s = sh.get(), &limit, &b, peek, bump] {
    Shared* sh = s;
    // This thread's own generator and count (the first calls are made here, the rest on
    // the client's thread).
    thread_local std::mt19937_64 rng{std::hash<std::thread::id>{}(std::this_thread::get_id())};
    thread_local uint64_t issued = 0;
    char key_buf[32] = "bench:";
    const auto key_end =
        std::to_chars(key_buf + 6, key_buf + sizeof key_buf, rng() % static_cast<uint64_t>(b.keys))
            .ptr;
    const std::string_view key(key_buf, static_cast<size_t>(key_end - key_buf));
    // Latency of one request in 8 (the clock would cost more than the request).
    const bool timed = (++issued & 7) == 0;
    const int64_t t0 = timed ? Clock::now().time_since_epoch().count() : 0;
    // Two words of capture: the callback fits in std::function without an allocation.
    auto cb = [sh, t0, bump](floodgate::Result<floodgate::Decision> r) {
      if (t0 != 0) {
        const auto dt = Clock::now() - Clock::time_point(Clock::duration(t0));
        sh->hist.add(std::chrono::duration_cast<std::chrono::microseconds>(dt).count());
      }
      bump(sh->done);
      if (!r.ok()) {
        if (sh->errors.load(std::memory_order_relaxed) == 0) sh->first_error = r.error();
        bump(sh->errors);
      } else if (r->allowed) {
        bump(sh->allowed);
      }
      if (!sh->stop.load(std::memory_order_relaxed)) return sh->next();
      bump(sh->ended);
    };
    if (peek) {
      client.peek(key, limit, 1, std::move(cb));
    } else {
      client.take(key, limit, 1, std::move(cb));
    }
  };
  const auto start = Clock::now();
  const int64_t window = static_cast<int64_t>(b.connections) * b.pipeline;
  for (int64_t i = 0; i < window; ++i) next();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(b.duration_s));
  uint64_t last = 0;
  auto last_t = start;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::min<Clock::duration>(Ms(1000), end - Clock::now()));
    const auto now = Clock::now();
    const uint64_t d = sh->done.load();
    if (!b.quiet) {
      const double dt = std::chrono::duration<double>(now - last_t).count();
      std::fprintf(stderr, "\r%6.1fs  %10.0f req/s  %12" PRIu64 " done  %" PRIu64 " errors   ",
                   std::chrono::duration<double>(now - start).count(),
                   dt > 0 ? static_cast<double>(d - last) / dt : 0.0, d, sh->errors.load());
    }
    last = d;
    last_t = now;
  }
  sh->stop = true;
  const auto stopped = Clock::now();
  const uint64_t total = sh->done.load();
  for (int i = 0; i < 500 && sh->ended.load() < static_cast<uint64_t>(window); ++i)
    std::this_thread::sleep_for(Ms(10));
  if (!b.quiet) std::fprintf(stderr, "\n");
  const double secs = std::chrono::duration<double>(stopped - start).count();
  // The histogram is read once the I/O thread has nothing left to add (or gave up).
  std::printf("requests: %" PRIu64 " in %.2f s, %d connections x %d pipelined\n", total, secs,
              b.connections, b.pipeline);
  std::printf("throughput: %.0f requests/s (allowed %" PRIu64 ", errors %" PRIu64 ")\n",
              static_cast<double>(total) / secs, sh->allowed.load(), sh->errors.load());
  std::printf("latency: p50 %" PRId64 " us, p99 %" PRId64 " us, p999 %" PRId64 " us\n",
              sh->hist.percentile(0.50), sh->hist.percentile(0.99), sh->hist.percentile(0.999));
  if (sh->errors.load() > 0) std::printf("first error: %s\n", sh->first_error.c_str());
  const auto st = client.stats();
  std::printf("frames: %" PRIu64 " (%.1f requests per frame)\n", st.frames,
              st.frames ? static_cast<double>(st.requests) / static_cast<double>(st.frames) : 0.0);
  return sh->errors.load() > 0 ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"floodgate-cli: talk to a Floodgate cluster over the native protocol"};
  app.set_version_flag("--version", std::string("floodgate-cli ") + FLOODGATE_VERSION +
                                        " (commit " FLOODGATE_COMMIT ")");
  app.require_subcommand(1);
  floodgate::Client::Options copt;
  std::string seeds = "127.0.0.1:7380";
  int64_t deadline_ms = 5000;
  app.add_option("-s,--seeds", seeds, "Native addresses of one or more nodes, host:port,...")
      ->capture_default_str();
  app.add_option("--deadline-ms", deadline_ms, "Give up on a request after this")
      ->capture_default_str();
  app.add_option("--user", copt.user, "The ACL user (default: \"default\")");
  app.add_option("-a,--password", copt.password,
                 "The user's password (for default: the nodes' requirepass)");
  app.add_flag("--tls", copt.tls.enabled, "Speak TLS (nodes started with --tls-native)");
  app.add_option("--cacert", copt.tls.ca_cert_file,
                 "CA certificate file that signed the nodes' certificates (default: the "
                 "system's)");
  app.add_option("--cert", copt.tls.cert_file, "This client's certificate, when nodes ask one");
  app.add_option("--key", copt.tls.key_file, "Its private key");
  bool insecure = false;
  app.add_flag("--insecure", insecure,
               "Do not check that the node's certificate names the address connected to");

  std::string key, holder, lease_hex;
  std::vector<std::string> limit_words;
  int64_t cost = 1, ttl_ms = 0;

  auto* take = app.add_subcommand("take", "Consume from KEY's limiter if it allows");
  auto* peek = app.add_subcommand("peek", "Evaluate KEY's limiter without consuming");
  for (auto* c : {take, peek}) {
    c->add_option("key", key)->required();
    c->add_option("limit", limit_words, "policy name, or <kind> <params...> (ms)")->required();
    c->add_option("--cost", cost, "Units to take")->capture_default_str();
  }
  auto* reset = app.add_subcommand("reset", "Forget KEY's state");
  reset->add_option("key", key)->required();
  auto* acquire = app.add_subcommand("acquire", "Take a lease on KEY (a concurrency limit)");
  acquire->add_option("key", key)->required();
  acquire->add_option("limit", limit_words, "concurrency policy, or concurrency <limit> <ttl_ms>")
      ->required();
  acquire->add_option("--holder", holder, "Holder the lease belongs to (for heartbeat)");
  auto* release = app.add_subcommand("release", "Give a lease back");
  release->add_option("key", key)->required();
  release->add_option("lease", lease_hex, "16 hex digits, as acquire printed")->required();
  auto* renew = app.add_subcommand("renew", "Extend one lease");
  renew->add_option("key", key)->required();
  renew->add_option("lease", lease_hex)->required();
  renew->add_option("ttl_ms", ttl_ms)->required();
  auto* count = app.add_subcommand("count", "Live leases on KEY");
  count->add_option("key", key)->required();
  auto* heartbeat = app.add_subcommand("heartbeat", "Renew every lease of HOLDER, on every node");
  heartbeat->add_option("holder", holder)->required();
  heartbeat->add_option("ttl_ms", ttl_ms)->required();
  auto* release_all = app.add_subcommand("release-all", "Release every lease of HOLDER");
  release_all->add_option("holder", holder)->required();
  auto* cluster = app.add_subcommand("cluster", "Members, their states and slot ranges");

  BenchOptions bo;
  auto* benchc =
      app.add_subcommand("bench", "Load a node or cluster; prints throughput and latency");
  benchc->add_option("-c,--connections", bo.connections, "Connections per node")
      ->capture_default_str();
  benchc->add_option("-P,--pipeline", bo.pipeline, "Requests outstanding per connection")
      ->capture_default_str();
  benchc->add_option("-d,--duration", bo.duration_s, "Seconds")->capture_default_str();
  benchc->add_option("-k,--keys", bo.keys, "Random keys bench:0 .. bench:N-1")
      ->capture_default_str();
  benchc->add_option("-l,--limit", bo.limit, "policy name, or <kind> <params...>")
      ->expected(1, 4)
      ->capture_default_str();
  benchc->add_option("--op", bo.op, "take or peek")
      ->check(CLI::IsMember({"take", "peek"}))
      ->capture_default_str();
  benchc->add_flag("-q,--quiet", bo.quiet, "No progress line");

  fgcli::TopOptions to;
  auto* top =
      app.add_subcommand("top", "A live view of the cluster from a node's admin port (q quits)");
  top->add_option("--admin", to.admin, "A node's admin port, host:port")->capture_default_str();
  top->add_option("--token-file", to.token_file, "The admin token, if the node wants one");
  top->add_option("--interval", to.interval_s, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  top->add_flag("--once", to.once, "Print one frame and exit");

  CLI11_PARSE(app, argc, argv);
  if (top->parsed()) return fgcli::run_top(to);  // (the admin port: no native connection)

  copt.seeds.clear();
  std::stringstream ss(seeds);
  for (std::string s; std::getline(ss, s, ',');)
    if (!s.empty()) copt.seeds.push_back(s);
  if (copt.seeds.empty()) return fail("--seeds: at least one host:port");
  copt.deadline = Ms(deadline_ms);
  copt.name = "floodgate-cli";
  copt.tls.verify_host = !insecure;
  if (!copt.tls.ca_cert_file.empty() || !copt.tls.cert_file.empty()) copt.tls.enabled = true;
  if (copt.tls.enabled) {
    try {
      floodgate::Client probe(copt);  // (a TLS file that cannot be used: said here, once)
    } catch (const std::exception& e) {
      return fail(e.what());
    }
  }

  if (benchc->parsed()) return bench(copt, bo);

  floodgate::Client client(copt);
  Limit limit;
  if (take->parsed() || peek->parsed() || acquire->parsed()) {
    const fg::Result<Limit> parsed = parse_limit(limit_words);
    if (!parsed.ok()) return fail(parsed.error());
    limit = parsed.value();
  }
  if (take->parsed() || peek->parsed()) {
    auto r = take->parsed() ? client.take(key, limit, cost) : client.peek(key, limit, cost);
    if (!check(r)) return 2;
    print(*r);
    return r->allowed ? 0 : 1;
  }
  if (reset->parsed()) {
    auto r = client.reset(key);
    if (!check(r)) return 2;
    std::printf("%s\n", *r ? "reset" : "no such key");
    return 0;
  }
  if (acquire->parsed()) {
    auto r = client.acquire(key, limit, holder);
    if (!check(r)) return 2;
    if (r->granted) {
      std::printf("granted lease=%s held=%" PRId64 " limit=%" PRId64 "\n", hex(r->id).c_str(),
                  r->held, r->limit);
      return 0;
    }
    std::printf("denied held=%" PRId64 " limit=%" PRId64 " retry_after_ms=%" PRId64 "\n", r->held,
                r->limit, r->retry_after_ms);
    return 1;
  }
  if (release->parsed() || renew->parsed()) {
    uint64_t id;
    if (!parse_hex(lease_hex, id)) return fail("a lease is 1-16 hex digits, not zero");
    auto r = release->parsed() ? client.release(key, id) : client.renew(key, id, ttl_ms);
    if (!check(r)) return 2;
    std::printf("%s\n", *r ? (release->parsed() ? "released" : "renewed") : "unknown or expired");
    return *r ? 0 : 1;
  }
  if (count->parsed() || heartbeat->parsed() || release_all->parsed()) {
    auto r = count->parsed()       ? client.count(key)
             : heartbeat->parsed() ? client.heartbeat(holder, ttl_ms)
                                   : client.release_all(holder);
    if (!check(r)) return 2;
    std::printf("%" PRId64 "\n", *r);
    return 0;
  }
  if (cluster->parsed()) {
    auto r = client.topology();
    if (!check(r)) return 2;
    const floodgate::Topology& t = *r;
    if (!t.cluster) {
      std::printf("standalone node %s (native %s)\n", t.nodes.empty() ? "?" : t.nodes[0].id.c_str(),
                  copt.seeds[0].c_str());
      return 0;
    }
    std::printf("epoch %" PRIu64 ", %s\n", t.epoch, t.quorum ? "quorum" : "NO QUORUM");
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const auto& n = t.nodes[i];
      int slots = 0;
      std::string ranges;
      for (const auto& rg : t.ranges) {
        if (rg.owner != static_cast<int>(i)) continue;
        slots += rg.last - rg.first + 1;
        ranges +=
            (ranges.empty() ? "" : ",") + std::to_string(rg.first) + "-" + std::to_string(rg.last);
      }
      std::printf("%-20s %s:%d (resp %d)  %-7s %5d slots  %s\n", n.id.c_str(), n.host.c_str(),
                  n.port, n.resp_port, n.state.c_str(), slots, ranges.c_str());
    }
    return 0;
  }
  return fail("nothing to do");
}
