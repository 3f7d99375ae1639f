// chaos-native-load: the chaos runner's load through floodgate::Client (the native client:
// routed to owners, retried across failover). Threads take from one key at a steady rate
// and print one history line per call until stdin closes or --max-seconds pass:
//   native <key> <client> -1 <start_s> <end_s> <ok|deny|info> <value>
// Times are CLOCK_MONOTONIC seconds, the runner's clock.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <floodgate/client.hpp>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  std::vector<std::string> seeds;
  std::string key, policy, name = "n";
  int clients = 8;
  double rate_hz = 20, max_seconds = 3600;
  int deadline_ms = 6000;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seeds") {
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) a.seeds.push_back(s);
    } else if (k == "--key") {
      a.key = v;
    } else if (k == "--policy") {
      a.policy = v;
    } else if (k == "--name") {
      a.name = v;
    } else if (k == "--clients") {
      a.clients = std::stoi(v);
    } else if (k == "--rate") {
      a.rate_hz = std::stod(v);
    } else if (k == "--deadline-ms") {
      a.deadline_ms = std::stoi(v);
    } else if (k == "--max-seconds") {
      a.max_seconds = std::stod(v);
    } else {
      return false;
    }
  }
  return !a.seeds.empty() && !a.key.empty() && !a.policy.empty() && a.clients > 0 && a.rate_hz > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    std::cerr << "usage: chaos-native-load --seeds h:p,... --key K --policy P [--clients N] "
                 "[--rate HZ] [--deadline-ms MS] [--max-seconds S] [--name PREFIX]\n";
    return 2;
  }
  floodgate::Client::Options opt;
  opt.seeds = a.seeds;
  opt.deadline = std::chrono::milliseconds(a.deadline_ms);
  opt.name = "chaos-native-load";
  floodgate::Client client(opt);
  const floodgate::Limit limit = floodgate::Limit::policy(a.policy);
  std::atomic<bool> stop{false};
  std::mutex out_mu;
  const double until = mono_s() + a.max_seconds;
  auto worker = [&](int idx) {
    using clock = std::chrono::steady_clock;
    const auto period =
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(1.0 / a.rate_hz));
    clock::time_point next = clock::now() + period * idx / a.clients;
    char line[512];
    while (!stop.load() && mono_s() < until) {
      std::this_thread::sleep_until(next);
      next = std::max(next + period, clock::now());
      const double start = mono_s();
      auto r = client.take(a.key, limit);
      const double end = mono_s();
      const char* outcome = "info";  // an error: it may have been counted (retries included)
      std::string value = "None";
      if (r.ok()) {
        outcome = r->allowed ? "ok" : "deny";
        if (!r->unavailable.empty()) value = r->unavailable;
      } else {
        value = r.error().empty() ? "error" : r.error().substr(0, 60);
        for (char& c : value)
          if (c == '\t' || c == '\n') c = ' ';
      }
      std::snprintf(line, sizeof line, "native\t%s\t%s%d\t-1\t%.6f\t%.6f\t%s\t%s\n", a.key.c_str(),
                    a.name.c_str(), idx, start, end, outcome, value.c_str());
      std::lock_guard<std::mutex> lock(out_mu);
      std::fputs(line, stdout);
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < a.clients; ++i) threads.emplace_back(worker, i);
  std::thread watcher([&] {  // stdin closing (the runner stopping or gone) ends the run
    std::string ignored;
    while (std::getline(std::cin, ignored)) {
    }
    stop = true;
  });
  watcher.detach();
  for (auto& t : threads) t.join();
  return 0;
}
