// Per-thread request counters and the most-denied keys (Space-Saving, bounded per thread).
#include "request_metrics.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <unordered_map>

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

namespace {
// The most-denied keys of one minute on one thread: Space-Saving over kDeniedSlots keys (a
// key not tracked takes the place of the least-denied one, with its count plus one, so a
// count never falls short of the key's true one). A denial costs a hash, a probe and a
// heap step, and allocates nothing once the slots' strings have grown: denials are what a
// node serves most of when it is being flooded.
class DeniedTop {
 public:
  DeniedTop() { slots_.fill(-1); }

  void add(std::string_view key) {
    const uint64_t h = std::hash<std::string_view>{}(key);
    for (size_t i = h & kMask; slots_[i] >= 0; i = (i + 1) & kMask) {
      Entry& e = entries_[static_cast<size_t>(slots_[i])];
      if (e.hash == h && e.key == key) {
        ++e.count;
        down(pos_[static_cast<size_t>(slots_[i])]);
        return;
      }
    }
    size_t e;
    if (size_ < kDeniedSlots) {
      e = size_++;
      entries_[e].count = 1;
      heap_[size_ - 1] = static_cast<int16_t>(e);
      pos_[e] = size_ - 1;
      up(size_ - 1);
    } else {
      e = static_cast<size_t>(heap_[0]);  // the least denied gives up its place
      unindex(e);
      ++entries_[e].count;
      down(0);
    }
    entries_[e].hash = h;
    entries_[e].key.assign(key);
    size_t i = h & kMask;
    while (slots_[i] >= 0) i = (i + 1) & kMask;
    slots_[i] = static_cast<int16_t>(e);
  }

  void clear() {
    size_ = 0;
    slots_.fill(-1);
  }
  template <class F>
  void each(F&& f) const {
    for (size_t e = 0; e < size_; ++e) f(entries_[e].key, entries_[e].count);
  }

 private:
  static constexpr size_t kTable = 2 * kDeniedSlots;  // open addressing, half full at most
  static constexpr size_t kMask = kTable - 1;
  static_assert((kTable & kMask) == 0, "a power of two");
  struct Entry {
    uint64_t hash = 0, count = 0;
    std::string key;
  };
  uint64_t count_at(size_t heap_pos) const {
    return entries_[static_cast<size_t>(heap_[heap_pos])].count;
  }
  void swap_at(size_t a, size_t b) {
    std::swap(heap_[a], heap_[b]);
    pos_[static_cast<size_t>(heap_[a])] = a;
    pos_[static_cast<size_t>(heap_[b])] = b;
  }
  void up(size_t i) {
    while (i > 0 && count_at((i - 1) / 2) > count_at(i)) {
      swap_at(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
  }
  void down(size_t i) {
    while (true) {
      const size_t l = 2 * i + 1, r = l + 1;
      size_t m = i;
      if (l < size_ && count_at(l) < count_at(m)) m = l;
      if (r < size_ && count_at(r) < count_at(m)) m = r;
      if (m == i) return;
      swap_at(i, m);
      i = m;
    }
  }
  // Takes entry `e` out of the probe table, shifting back the entries after it that would
  // otherwise no longer be found (linear probing's deletion, no tombstones).
  void unindex(size_t e) {
    size_t p = entries_[e].hash & kMask;
    while (slots_[p] != static_cast<int16_t>(e)) p = (p + 1) & kMask;
    for (size_t j = (p + 1) & kMask; slots_[j] >= 0; j = (j + 1) & kMask) {
      const size_t home = entries_[static_cast<size_t>(slots_[j])].hash & kMask;
      const bool stays = p <= j ? (p < home && home <= j) : (p < home || home <= j);
      if (!stays) {
        slots_[p] = slots_[j];
        p = j;
      }
    }
    slots_[p] = -1;
  }

  std::array<Entry, kDeniedSlots> entries_;
  std::array<int16_t, kDeniedSlots> heap_{};  // entry indexes, least denied first
  std::array<size_t, kDeniedSlots> pos_{};    // entry index -> its place in heap_
  std::array<int16_t, kTable> slots_;         // hash -> entry index, -1: empty
  size_t size_ = 0;
};
}  // namespace

namespace {
// Keys counted in this minute and the one before.
struct MinuteTop {
  int64_t minute = 0;
  DeniedTop now, before;

  void add(std::string_view key, int64_t now_s) {
    const int64_t m = now_s / 60;
    if (m != minute) {
      if (m == minute + 1) {
        std::swap(before, now);
      } else {
        before.clear();
      }
      now.clear();
      minute = m;
    }
    now.add(key);
  }
  // Each key's count over the last minute or two, times `scale`, added into `all`.
  void sum(int64_t now_s, uint64_t scale, std::unordered_map<std::string, uint64_t>& all) const {
    auto add = [&all, scale](const std::string& k, uint64_t v) { all[k] += v * scale; };
    if (minute == now_s / 60) {
      now.each(add);
      before.each(add);
    } else if (minute + 1 == now_s / 60) {
      now.each(add);
    }
  }
};
}  // namespace

struct RequestMetrics::Block {
  std::atomic<uint64_t> requests[kMaxCommandIds][kResults] = {};
  std::atomic<uint64_t> latency[kMaxCommandIds][kLatencyBuckets] = {};
  std::atomic<uint64_t> latency_sum_us[kMaxCommandIds] = {};
  std::atomic<uint64_t> policy[kMaxPolicyIds][3] = {};
  // Most-denied keys of this minute and the one before; the hottest (sampled), likewise.
  mutable std::mutex denied_mu;
  MinuteTop denied, hot;
};

namespace {
std::atomic<uint64_t> next_metrics_id{1};
// The block this thread last wrote, and whose it is: a thread serves one node almost
// always, so the lookup below is rare.
thread_local uint64_t cached_owner = 0;
thread_local void* cached_block = nullptr;
}  // namespace

RequestMetrics::RequestMetrics() : id_(next_metrics_id.fetch_add(1)) {}
RequestMetrics::~RequestMetrics() = default;

RequestMetrics& RequestMetrics::get() {
  static RequestMetrics m;
  return m;
}

RequestMetrics::Block& RequestMetrics::local() {
  if (cached_owner == id_) return *static_cast<Block*>(cached_block);
  return local_slow();
}

RequestMetrics::Block& RequestMetrics::local_slow() {
  std::lock_guard<std::mutex> lock(mu_);
  Block*& mine = by_thread_[std::this_thread::get_id()];
  if (!mine) {
    blocks_.push_back(std::make_unique<Block>());  // (kept as long as these metrics)
    mine = blocks_.back().get();
  }
  cached_owner = id_;
  cached_block = mine;
  return *mine;
}

void RequestMetrics::record(uint16_t command, RequestResult r, int64_t latency_us, uint64_t n) {
  if (command >= kMaxCommandIds || n == 0) return;
  Block& b = local();
  bump(b.requests[command][static_cast<size_t>(r)], n);
  if (latency_us < 0) latency_us = 0;
  bump(b.latency[command][bucket_of(latency_us)], n);
  bump(b.latency_sum_us[command], static_cast<uint64_t>(latency_us) * n);
}

void RequestMetrics::decision(uint16_t policy, bool allowed, bool shadow_denied) {
  if (policy >= kMaxPolicyIds) policy = 0;
  Block& b = local();
  bump(b.policy[policy][allowed ? 0 : 1]);
  if (shadow_denied) bump(b.policy[policy][2]);
}

void RequestMetrics::denied(std::string_view key, int64_t now_s) {
  Block& b = local();
  std::lock_guard<std::mutex> lock(b.denied_mu);
  b.denied.add(key, now_s);
}

void RequestMetrics::hot(std::string_view key, int64_t now_s) {
  Block& b = local();
  std::lock_guard<std::mutex> lock(b.denied_mu);
  b.hot.add(key, now_s);
}

RequestMetrics::Counts RequestMetrics::counts_since_reset() const {
  Counts c = counts();
  std::lock_guard<std::mutex> lock(mu_);
  if (!base_) return c;
  for (size_t i = 0; i < kMaxCommandIds; ++i) {
    for (size_t r = 0; r < kResults; ++r) c.requests[i][r] -= base_->requests[i][r];
    for (size_t k = 0; k < kLatencyBuckets; ++k) c.latency[i][k] -= base_->latency[i][k];
    c.latency_sum_us[i] -= base_->latency_sum_us[i];
  }
  for (size_t p = 0; p < c.policy.size(); ++p)
    for (size_t k = 0; k < c.policy[p].size(); ++k) c.policy[p][k] -= base_->policy[p][k];
  return c;
}

void RequestMetrics::reset_view() {
  auto now = std::make_unique<Counts>(counts());
  std::lock_guard<std::mutex> lock(mu_);
  base_ = std::move(now);
}

void ErrorStats::count(std::string_view reply, uint64_t n) {
  if (n == 0) return;
  total_.fetch_add(n, std::memory_order_relaxed);
  // Redis's rule: the code is what comes before the first space within 32 bytes; else ERR.
  std::string_view code = "ERR";
  const size_t space = reply.substr(0, 32).find(' ');
  if (space != std::string_view::npos && space > 1) {
    const std::string_view word = reply.substr(1, space - 1);
    if (word.find_first_of("\r\n") == std::string_view::npos) code = word;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = codes_.find(code);
  if (it == codes_.end()) {
    if (codes_.size() >= kMaxCodes) code = "ERRORSTATS_OVERFLOW";
    it = codes_.emplace(std::string(code), 0).first;
  }
  it->second += n;
}

std::vector<std::pair<std::string, uint64_t>> ErrorStats::codes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {codes_.begin(), codes_.end()};
}

void ErrorStats::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  codes_.clear();
  total_.store(0, std::memory_order_relaxed);
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
      for (int k = 0; k < 3; ++k) c.policy[p][k] += b->policy[p][k].load(std::memory_order_relaxed);
  }
  return c;
}

std::vector<RequestMetrics::DeniedKey> RequestMetrics::top(size_t n, int64_t now_s,
                                                           bool hot) const {
  std::unordered_map<std::string, uint64_t> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& b : blocks_) {
      std::lock_guard<std::mutex> lock2(b->denied_mu);
      if (hot) {
        b->hot.sum(now_s, kHotSample, all);
      } else {
        b->denied.sum(now_s, 1, all);
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
