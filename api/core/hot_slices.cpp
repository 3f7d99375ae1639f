#include "hot_slices.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "request.hpp"

namespace fg {

namespace {

constexpr int64_t kTenthNs = 100'000'000;     // forwards are counted per tenth of a second
constexpr int64_t kForgetNs = 1'000'000'000;  // a key not forwarded for this long: let go

bool same_limit(const LimitSpec& x, const LimitSpec& y) {
  return x.kind == y.kind && x.a == y.a && x.b == y.b && x.c == y.c &&
         x.count_denied == y.count_denied;
}

int64_t capacity_of(const LimitSpec& s) {
  return s.kind == Kind::kGcra ? s.a + 1 : std::max<int64_t>(1, s.a);
}

bool window_kind(Kind k) { return k == Kind::kFixedWindow || k == Kind::kCalendarWindow; }

}  // namespace

bool HotSlices::sliceable(const LimitSpec& s) {
  // (shadow: its would-be denials are the owner's to count, on every take; a window that
  // counts denied hits — the gateway door's upstream counters — would count a denied
  // slice's tokens as hits)
  if (s.no_slices || s.shadow || s.count_denied) return false;
  switch (s.kind) {
    case Kind::kTokenBucket:
    case Kind::kGcra:
    case Kind::kFixedWindow:
    case Kind::kCalendarWindow:
    case Kind::kSlidingWindow:
      return true;
    default:
      return false;
  }
}

HotSlices::Stripe& HotSlices::stripe(std::string_view key) {
  return stripes_[std::hash<std::string_view>{}(key) % kStripes];
}

bool HotSlices::take(std::string_view key, const LimitSpec& spec, int64_t cost, int64_t now_ns,
                     size_t nodes, Decision& out, int64_t& ask) {
  ask = 0;
  const int64_t threshold = threshold_.load(std::memory_order_relaxed);
  if (threshold <= 0 || cost <= 0 || !sliceable(spec)) return false;
  thread_local std::string name;
  name.assign(key);
  Stripe& st = stripe(key);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.keys.find(name);
  if (it == st.keys.end()) {
    if (st.keys.size() >= kKeysPerStripe) {
      // Full: the keys not forwarded for a second, or far slower than the threshold, let go
      // (a slice's never is) — looked for at most every tenth of a second, so a sea of cold
      // keys costs a forward this look-up and no more, and leaves room for a hot one.
      if (now_ns - st.swept_ns < kTenthNs) return false;
      st.swept_ns = now_ns;
      for (auto e = st.keys.begin(); e != st.keys.end();) {
        const Hot& x = e->second;
        const bool cold = now_ns - x.last_seen > kForgetNs ||
                          std::max(x.rate, x.count * (1'000'000'000 / kTenthNs)) < threshold / 4;
        e = cold && !x.asking && now_ns >= x.expires ? st.keys.erase(e) : std::next(e);
      }
      if (st.keys.size() >= kKeysPerStripe) return false;  // (watching enough keys already)
    }
    it = st.keys.emplace(name, Hot{}).first;
    it->second.spec = spec;
    it->second.window_start = now_ns;
  }
  Hot& h = it->second;
  if (!same_limit(h.spec, spec)) {
    // Its policy changed: what was sliced under the old one is not spent under the new.
    h.spec = spec;
    h.tokens = 0;
    h.remaining = -1;
  }
  h.last_seen = now_ns;
  if (now_ns - h.window_start >= kTenthNs) {
    h.rate = h.count * 1'000'000'000 / (now_ns - h.window_start);
    h.count = 0;
    h.window_start = now_ns;
  }
  if (now_ns >= h.expires) h.tokens = 0;  // (a slice's rest when its time is up: lost)
  if (h.tokens >= cost) {
    h.tokens -= cost;
    admitted.fetch_add(1, std::memory_order_relaxed);
    out = Decision{};
    out.allowed = true;
    out.limit = h.limit;
    out.remaining = std::max<int64_t>(0, h.remaining) + h.tokens;
    out.reset_after_ns = std::max<int64_t>(0, h.reset_at - now_ns);
    out.retry_after_ns = kNever;
    return true;
  }
  ++h.count;
  const int64_t rate = std::max(h.rate, h.count * (1'000'000'000 / kTenthNs));
  if (h.asking || rate < threshold) return false;
  // A slice's worth of what this node forwards, half as much again, and this take; at most
  // the owner's remaining capacity's share of one node.
  const int64_t slice_ns = slice_ns_.load(std::memory_order_relaxed);
  const double want = static_cast<double>(rate) * static_cast<double>(slice_ns) / 1e9 * 1.5;
  const int64_t remaining = h.remaining >= 0 ? h.remaining : capacity_of(spec);
  const int64_t fair =
      std::max<int64_t>(1, remaining / static_cast<int64_t>(std::max<size_t>(1, nodes)));
  ask = std::clamp<int64_t>(want >= static_cast<double>(kMaxCount)
                                ? kMaxCount
                                : static_cast<int64_t>(std::ceil(want)) + cost,
                            1, fair);
  h.asking = true;
  asked.fetch_add(1, std::memory_order_relaxed);
  if (observe) observe(key, ask, 0);
  return false;
}

void HotSlices::granted(std::string_view key, const LimitSpec& spec, int64_t asked_tokens,
                        const Outcome& o, int64_t now_ns) {
  thread_local std::string name;
  name.assign(key);
  Stripe& st = stripe(key);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.keys.find(name);
  if (it == st.keys.end()) return;
  Hot& h = it->second;
  h.asking = false;
  if (!o.ok() || o.unavailable != FailMode::kError || !same_limit(h.spec, spec)) return;
  const Decision& d = o.decision;
  h.remaining = d.remaining;
  h.limit = d.limit;
  h.reset_at = now_ns + d.reset_after_ns;
  if (!d.allowed) return;
  if (now_ns >= h.expires) h.tokens = 0;
  h.tokens = std::min(h.tokens + asked_tokens, kMaxCount);
  h.expires = now_ns + slice_ns_.load(std::memory_order_relaxed);
  // A window's slice ends with its window: the owner's count starts again then.
  if (window_kind(spec.kind) && d.reset_after_ns > 0) {
    h.expires = std::min(h.expires, now_ns + d.reset_after_ns);
  }
  granted_slices.fetch_add(1, std::memory_order_relaxed);
  granted_tokens.fetch_add(static_cast<uint64_t>(asked_tokens), std::memory_order_relaxed);
  if (observe) observe(key, asked_tokens, h.expires);
}

int64_t HotSlices::held(std::string_view key, int64_t now_ns) {
  thread_local std::string name;
  name.assign(key);
  Stripe& st = stripe(key);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.keys.find(name);
  return it == st.keys.end() || now_ns >= it->second.expires ? 0 : it->second.tokens;
}

int64_t HotSlices::held(int64_t now_ns) {
  int64_t sum = 0;
  for (Stripe& st : stripes_) {
    std::lock_guard<std::mutex> lock(st.mu);
    for (const auto& [k, h] : st.keys) sum += now_ns < h.expires ? h.tokens : 0;
  }
  return sum;
}

}  // namespace fg
