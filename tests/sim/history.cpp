#include "history.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace fg::sim {

namespace {
// A stepped wall clock is slewed in at 500 ppm: a limit of L per W then holds in node
// time, i.e. within W * (1 - 500e-6) of true time. Windows are judged at that length.
constexpr double kClockRateTolerance = 500e-6;
}  // namespace

size_t History::open(char kind, int client, int node, int64_t start) {
  Op o;
  o.kind = kind;
  o.client = client;
  o.node = node;
  o.start = start;
  ops_.push_back(o);
  return ops_.size() - 1;
}

bool History::close(size_t i, int64_t end, Res res, bool fail_mode, int64_t value) {
  Op& o = ops_[i];
  if (o.done) return false;
  o.done = true;
  o.end = end;
  o.res = res;
  o.fail_mode = fail_mode;
  o.value = value;
  const int64_t rec[] = {static_cast<int64_t>(i),     o.kind,      o.client, o.node, o.start, o.end,
                         static_cast<int64_t>(o.res), o.fail_mode, o.value};
  fold(rec, sizeof(rec));
  return true;
}

void History::note(const std::string& line) { fold(line.data(), line.size()); }

void History::close_all(int64_t end) {
  for (size_t i = 0; i < ops_.size(); ++i)
    if (!ops_[i].done) close(i, end, Res::kInfo);
}

void History::fold(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    digest_ ^= b[i];
    digest_ *= 0x100000001b3ULL;
  }
}

// Definite admissions of `kind` inside [from, to], as (start, end), in order of start.
static std::vector<std::pair<int64_t, int64_t>> definite_admissions(const std::vector<Op>& ops,
                                                                    char kind, int64_t from,
                                                                    int64_t to) {
  std::vector<std::pair<int64_t, int64_t>> adm;
  for (const Op& o : ops) {
    if (o.kind == kind && o.res == Res::kOk && !o.fail_mode && o.start >= from && o.end <= to)
      adm.push_back({o.start, o.end});
  }
  std::sort(adm.begin(), adm.end());
  return adm;
}

bool maybe_counted(const Op& o) { return o.res == Res::kOk || o.res == Res::kInfo || o.fail_mode; }

int64_t over_admission(const std::vector<Op>& ops, char kind, int64_t limit, int64_t window_ns,
                       int64_t from, int64_t to) {
  const auto w = static_cast<int64_t>(static_cast<double>(window_ns) * (1 - kClockRateTolerance));
  const auto adm = definite_admissions(ops, kind, from, to);
  int64_t worst = 0;
  for (size_t i = 0; i < adm.size(); ++i) {
    const int64_t t = adm[i].first;
    int64_t n = 0;
    for (size_t k = i; k < adm.size() && adm[k].first < t + w; ++k) n += adm[k].second < t + w;
    worst = std::max(worst, n - limit);
  }
  return worst;
}

int64_t bucket_over_admission(const std::vector<Op>& ops, char kind, int64_t burst,
                              double rate_per_s, int64_t from, int64_t to, int64_t horizon_ns,
                              const Allowance& extra) {
  const auto adm = definite_admissions(ops, kind, from, to);
  const double rate_per_ns = rate_per_s * (1 + kClockRateTolerance) / 1e9;
  int64_t worst = 0;
  std::vector<int64_t> ends;
  for (size_t i = 0; i < adm.size(); ++i) {
    const int64_t t1 = adm[i].first;
    const int64_t more = extra ? extra(t1) : 0;
    ends.clear();
    for (size_t k = i; k < adm.size() && adm[k].first < t1 + horizon_ns; ++k)
      ends.push_back(adm[k].second);
    std::sort(ends.begin(), ends.end());
    for (size_t n = 1; n <= ends.size(); ++n) {
      const auto allowed =
          burst + more + static_cast<int64_t>(rate_per_ns * static_cast<double>(ends[n - 1] - t1));
      worst = std::max(worst, static_cast<int64_t>(n) - allowed);
    }
  }
  return worst;
}

int64_t aligned_over_admission(const std::vector<Op>& ops, char kind, int64_t limit,
                               int64_t window_ns, int64_t from, int64_t to,
                               const Allowance& extra) {
  std::map<int64_t, int64_t> in_window;
  for (const auto& [start, end] : definite_admissions(ops, kind, from, to)) {
    const int64_t w = start / window_ns;
    in_window[w] += end / window_ns == w;
  }
  int64_t worst = 0;
  for (const auto& [w, n] : in_window) {
    worst = std::max(worst, n - limit - (extra ? extra(w * window_ns) : 0));
  }
  return worst;
}

int64_t bounded_over_admission(const std::vector<Op>& ops, char kind, int64_t limit,
                               const std::vector<int64_t>& ends, int64_t from, int64_t to) {
  auto window_of = [&](int64_t t) {
    return std::upper_bound(ends.begin(), ends.end(), t) - ends.begin();
  };
  std::map<int64_t, int64_t> in_window;
  for (const auto& [start, end] : definite_admissions(ops, kind, from, to)) {
    const auto w = window_of(start);
    in_window[w] += window_of(end) == w;  // (one that straddles an end may be in either)
  }
  int64_t worst = 0;
  for (const auto& [w, n] : in_window) worst = std::max(worst, n - limit);
  return worst;
}

int64_t possible_admissions(const std::vector<Op>& ops, char kind, int64_t from, int64_t to) {
  int64_t n = 0;
  for (const Op& o : ops) n += o.kind == kind && maybe_counted(o) && o.start <= to && o.end >= from;
  return n;
}

std::pair<int64_t, int64_t> counter_bounds(const std::vector<Op>& ops, char kind,
                                           int64_t read_start, int64_t read_end) {
  int64_t lower = 0, upper = 0;
  for (const Op& o : ops) {
    if (o.kind != kind) continue;
    lower += o.res == Res::kOk && !o.fail_mode && o.end < read_start;
    upper += maybe_counted(o) && o.start < read_end;
  }
  return {lower, upper};
}

int64_t lease_overlap(const std::vector<Op>& ops, char acquire, char release,
                      const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t run_end,
                      int64_t ttl_ns) {
  // Each client holds at most one lease: its acquire, then the release that follows.
  std::map<int, std::vector<const Op*>> by_client;
  for (const Op& o : ops)
    if (o.kind == acquire || o.kind == release) by_client[o.client].push_back(&o);
  std::vector<std::pair<int64_t, int>> marks;
  for (auto& [c, seq] : by_client) {
    // (Stable: a close recorded as of its acquire's start still follows the acquire.)
    std::stable_sort(seq.begin(), seq.end(),
                     [](const Op* a, const Op* b) { return a->start < b->start; });
    for (size_t i = 0; i < seq.size(); ++i) {
      const Op& o = *seq[i];
      if (o.kind != acquire || o.res != Res::kOk || o.fail_mode) continue;
      int64_t end = run_end;
      if (ttl_ns > 0) {
        const auto ttl =
            static_cast<int64_t>(static_cast<double>(ttl_ns) * (1 - kClockRateTolerance));
        end = std::min(end, o.start + ttl);
      }
      for (size_t k = i + 1; k < seq.size(); ++k) {
        if (seq[k]->kind == release) {
          end = std::min(end, seq[k]->start);
          break;
        }
      }
      if (end > o.end) {
        marks.push_back({o.end, 1});
        marks.push_back({end, -1});
      }
    }
  }
  std::sort(marks.begin(), marks.end());
  auto inside = [&](int64_t t) {
    for (const auto& [a, b] : spans)
      if (t >= a && t <= b) return true;
    return false;
  };
  int64_t live = 0, worst = 0;
  for (const auto& [t, d] : marks) {
    live += d;
    if (d > 0 && inside(t)) worst = std::max(worst, live);
  }
  return worst;
}

}  // namespace fg::sim
