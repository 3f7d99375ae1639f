// Per-thread request counters and the most-denied keys (Space-Saving, bounded per thread).
#include "request_metrics.hpp"

#include <algorithm>

namespace fg {

namespace {
constexpr size_t kResults = static_cast<size_t>(RequestResult::kCount);
constexpr size_t kDeniedSlots = 128;  // keys tracked per thread per minute

inline void bump(std::atomic<uint64_t>& a, uint64_t n = 1) {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // one writer
}

size_t bucket_of(int64_t us) {
  for (size_t i = 0; i < kLatencyBoundsUs.size(); ++i)
    if (us <= kLatencyBoundsUs[i]) return i;
  return kLatencyBoundsUs.size();
}
}  // namespace

std::string_view result_name(RequestResult r) {
  switch (r) {
    case RequestResult::kOk:
      return "ok";
    case RequestResult::kError:
      return "error";
    case RequestResult::kAllowed:
      return "allowed";
    case RequestResult::kDenied:
      return "denied";
    case RequestResult::kCount:
      break;
  }
  return "?";
}

struct RequestMetrics::Block {
  std::atomic<uint64_t> requests[kMaxCommandIds][kResults] = {};
  std::atomic<uint64_t> latency[kMaxCommandIds][kLatencyBuckets] = {};
  std::atomic<uint64_t> latency_sum_us[kMaxCommandIds] = {};
  std::atomic<uint64_t> policy[kMaxPolicyIds][2] = {};
  // Most-denied keys of this minute and the one before (Space-Saving counts).
  mutable std::mutex denied_mu;
  int64_t minute = 0;
  std::unordered_map<std::string, uint64_t> now, before;
};

RequestMetrics& RequestMetrics::get() {
  static RequestMetrics m;
  return m;
}

RequestMetrics::Block& RequestMetrics::local() {
  thread_local Block* mine = nullptr;
  if (!mine) {
    auto b = std::make_unique<Block>();
    mine = b.get();
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.push_back(std::move(b));  // blocks live as long as the process
  }
  return *mine;
}

void RequestMetrics::record(uint16_t command, RequestResult r, int64_t latency_us) {
  if (command >= kMaxCommandIds) return;
  Block& b = local();
  bump(b.requests[command][static_cast<size_t>(r)]);
  if (latency_us < 0) latency_us = 0;
  bump(b.latency[command][bucket_of(latency_us)]);
  bump(b.latency_sum_us[command], static_cast<uint64_t>(latency_us));
}

void RequestMetrics::decision(uint16_t policy, bool allowed) {
  if (policy >= kMaxPolicyIds) policy = 0;
  bump(local().policy[policy][allowed ? 0 : 1]);
}

void RequestMetrics::denied(std::string_view key, int64_t now_s) {
  Block& b = local();
  std::lock_guard<std::mutex> lock(b.denied_mu);
  const int64_t minute = now_s / 60;
  if (minute != b.minute) {
    b.before = minute == b.minute + 1 ? std::move(b.now) : decltype(b.now)();
    b.now.clear();
    b.minute = minute;
  }
  auto it = b.now.find(std::string(key));
  if (it != b.now.end()) {
    ++it->second;
  } else if (b.now.size() < kDeniedSlots) {
    b.now.emplace(std::string(key), 1);
  } else {
    // Space-Saving: the newcomer takes the smallest count's place, plus one.
    auto min = std::min_element(b.now.begin(), b.now.end(),
                                [](const auto& x, const auto& y) { return x.second < y.second; });
    const uint64_t c = min->second + 1;
    b.now.erase(min);
    b.now.emplace(std::string(key), c);
  }
}

RequestMetrics::Counts RequestMetrics::counts() const {
  Counts c;
  c.requests.assign(kMaxCommandIds, {});
  c.latency.assign(kMaxCommandIds, {});
  c.latency_sum_us.assign(kMaxCommandIds, 0);
  c.policy.assign(kMaxPolicyIds, {});
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& b : blocks_) {
    for (size_t i = 0; i < kMaxCommandIds; ++i) {
      for (size_t r = 0; r < kResults; ++r)
        c.requests[i][r] += b->requests[i][r].load(std::memory_order_relaxed);
      for (size_t k = 0; k < kLatencyBuckets; ++k)
        c.latency[i][k] += b->latency[i][k].load(std::memory_order_relaxed);
      c.latency_sum_us[i] += b->latency_sum_us[i].load(std::memory_order_relaxed);
    }
    for (size_t p = 0; p < kMaxPolicyIds; ++p)
      for (int k = 0; k < 2; ++k) c.policy[p][k] += b->policy[p][k].load(std::memory_order_relaxed);
  }
  return c;
}

std::vector<RequestMetrics::DeniedKey> RequestMetrics::top_denied(size_t n, int64_t now_s) const {
  std::unordered_map<std::string, uint64_t> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t minute = now_s / 60;
    for (const auto& b : blocks_) {
      std::lock_guard<std::mutex> lock2(b->denied_mu);
      if (b->minute == minute) {
        for (const auto& [k, v] : b->now) all[k] += v;
        for (const auto& [k, v] : b->before) all[k] += v;
      } else if (b->minute + 1 == minute) {
        for (const auto& [k, v] : b->now) all[k] += v;
      }
    }
  }
  std::vector<DeniedKey> out;
  for (auto& [k, v] : all) out.push_back({k, v});
  std::sort(out.begin(), out.end(), [](const DeniedKey& a, const DeniedKey& b) {
    return a.denials != b.denials ? a.denials > b.denials : a.key < b.key;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace fg
