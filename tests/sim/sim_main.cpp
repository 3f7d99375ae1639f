// floodgate-sim: a Floodgate cluster in one process, in virtual time (tests/README.md,
// "The simulator"). Each seed runs N real nodes under seeded client load and seeded faults,
// checks DESIGN.md's stated bounds against what the clients saw, and prints one verdict
// line; the same seed gives the same run, and the same digest, every time.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scale.hpp"
#include "scenario.hpp"

namespace {

void usage(FILE* to) {
  std::fprintf(
      to,
      "usage: floodgate-sim --seed S [--nodes N] [--seconds T] [--faults LIST] [--load L]\n"
      "                     [--replicas R] [--verbose]\n"
      "       floodgate-sim --seeds A..B [--nodes N] [--seconds T] [--faults LIST] [--load L]\n"
      "                     [--replicas R]\n"
      "       floodgate-sim --scale N1,N2,... [--seeds A..B] [--keys K] [--rate R]\n"
      "           (how upkeep grows with the cluster's size: a line of figures per size and seed,\n"
      "           tests/sim/scale/README.md)\n"
      "faults: %s (default: kill to restart, and overlap; disk, rolling, bounce, reboot and\n"
      "        the pairs overlap draws from only when named; 'none' for none)\n"
      "replicas: copies of each slot the nodes keep (default 2; kill+kill wants 3)\n"
      "load: full (default: every limiter kind, reservations, data commands, leases with a\n"
      "      holder, without one and BOUND), doors (full, and clients speaking RESP to the\n"
      "      nodes: MULTI/EXEC, EVAL and pub/sub over the connection shell) or basic (the sliding "
      "log,\n"
      "      two counters, a holder's leases: the load seeds found before 'full' replay on)\n",
      fg::sim::fault_names().c_str());
}

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoull(s.c_str(), &end, 10);
  return end && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  fg::sim::Options opt;
  std::vector<int> scale;
  fg::sim::ScaleRun scale_run;
  uint64_t first = 0, last = 0;
  bool have_seed = false, sweep = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    uint64_t n = 0;
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--seed" && value(v) && parse_u64(v, first)) {
      last = first;
      have_seed = true;
    } else if (a == "--seeds" && value(v) && v.find("..") != std::string::npos &&
               parse_u64(v.substr(0, v.find("..")), first) &&
               parse_u64(v.substr(v.find("..") + 2), last) && first <= last) {
      have_seed = sweep = true;
    } else if (a == "--nodes" && value(v) && parse_u64(v, n) && n >= 2 && n <= 9) {
      opt.nodes = static_cast<int>(n);
    } else if (a == "--replicas" && value(v) && parse_u64(v, n) && n >= 1 && n <= 5) {
      opt.replicas = static_cast<int>(n);
    } else if (a == "--seconds" && value(v) && parse_u64(v, n) && n >= 5 && n <= 3600) {
      opt.seconds = static_cast<int>(n);
    } else if (a == "--faults" && value(v)) {
      std::string why;
      if (!fg::sim::parse_faults(v, opt.faults, why)) {
        std::fprintf(stderr, "floodgate-sim: %s\n", why.c_str());
        return 2;
      }
    } else if (a == "--load" && value(v) &&
               (v == "full" || v == "basic" || v == "doors" || v == "hot")) {
      opt.load = v == "full"    ? fg::sim::Load::kFull
                 : v == "doors" ? fg::sim::Load::kDoors
                 : v == "hot"   ? fg::sim::Load::kHot
                                : fg::sim::Load::kBasic;
    } else if (a == "--scale" && value(v)) {
      std::stringstream in(v);
      std::string part;
      while (std::getline(in, part, ',')) {
        if (!parse_u64(part, n) || n < 3 || n > 2000) {
          std::fprintf(stderr, "floodgate-sim: --scale takes sizes from 3 to 2000\n");
          return 2;
        }
        scale.push_back(static_cast<int>(n));
      }
    } else if (a == "--keys" && value(v) && parse_u64(v, n) && n <= 10'000'000) {
      scale_run.keys = static_cast<int64_t>(n);
    } else if (a == "--rate" && value(v) && parse_u64(v, n) && n >= 1000 && n <= 1'000'000) {
      scale_run.load_per_s = static_cast<int64_t>(n);
    } else if (a == "--verbose") {
      verbose = opt.verbose = true;
    } else {
      std::fprintf(stderr, "floodgate-sim: bad argument %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::off);
  if (!scale.empty()) {
    if (!have_seed) first = last = 1;
    std::printf("%s\n", fg::sim::scale_header().c_str());
    std::fflush(stdout);
    bool ok = true;
    for (int n : scale) {
      for (uint64_t seed = first;; ++seed) {
        scale_run.nodes = n;
        scale_run.seed = seed;
        const auto t0 = std::chrono::steady_clock::now();
        const fg::sim::ScaleFigures f = fg::sim::run_scale(scale_run);
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s %.1f\n", fg::sim::scale_line(f).c_str(), wall);
        std::fflush(stdout);
        ok = ok && f.error.empty();
        if (seed == last) break;
      }
    }
    return ok ? 0 : 1;
  }
  if (!have_seed) {
    usage(stderr);
    return 2;
  }
  uint64_t failed = 0;
  uint64_t digest = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t simulated_ns = 0;
  for (uint64_t seed = first;; ++seed) {
    const fg::sim::Verdict v = fg::sim::run_seed(seed, opt);
    std::printf("%s\n", v.line.c_str());
    std::fflush(stdout);
    failed += !v.passed;
    digest = v.digest;
    simulated_ns += v.simulated_ns;
    if (seed == last) break;
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("simulated %.1f s in %.2f s of wall clock (%.0fx)\n", simulated_ns / 1e9, wall_s,
              wall_s > 0 ? simulated_ns / 1e9 / wall_s : 0.0);
  if (sweep) {
    std::printf("%llu seeds, %llu failed\n", static_cast<unsigned long long>(last - first + 1),
                static_cast<unsigned long long>(failed));
  } else {
    std::printf("digest %016llx\n", static_cast<unsigned long long>(digest));
  }
  return failed ? 1 : 0;
}
