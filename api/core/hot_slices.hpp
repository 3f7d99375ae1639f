// Quota slices for hot keys (api/COMMANDS.md, "Quota slices"). A key another node owns is
// forwarded there for every take; once this node forwards one key's takes faster than
// `slice-threshold` a second, it asks the owner — in the same forward — for a slice of the
// key's capacity as well: a take like any other, counted at the owner (and replicated) when
// it is made. Until the slice is spent or its time (`slice-ms`; a window's slice ends with
// its window) is up, this node admits that key's takes from it without a hop. A take the
// slice cannot cover is forwarded as before (a denial is always the owner's). So what a key
// admits beyond its limit in a window is at most the slices outstanding when the window
// began — tokens the owner counted in an earlier window, spent in this one — and a node that
// dies holding a slice loses it: counted as taken, never given twice.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

struct Outcome;

class HotSlices {
 public:
  // Forwards a second of one key from this node past which it slices (0: never), and how
  // long a slice lasts. Any thread; in force for the next take.
  void configure(int64_t threshold_per_s, int64_t slice_ms) {
    threshold_.store(threshold_per_s, std::memory_order_relaxed);
    slice_ns_.store(slice_ms * 1'000'000, std::memory_order_relaxed);
  }
  bool on() const { return threshold_.load(std::memory_order_relaxed) > 0; }

  // A take of `cost` on `key` (owned by another node, a client's own, not waiting): true when
  // this node's slice of it admits it (`out` is the decision). Otherwise it is forwarded;
  // `ask` is then the slice to ask the owner for along with it (0: none). `nodes`: the
  // cluster's members (a slice is at most the remaining capacity's share of one).
  bool take(std::string_view key, const LimitSpec& spec, int64_t cost, int64_t now_ns, size_t nodes,
            Decision& out, int64_t& ask);
  // The owner's answer to a slice asked for: kept for the key's next takes if granted.
  void granted(std::string_view key, const LimitSpec& spec, int64_t asked, const Outcome& o,
               int64_t now_ns);
  // Tokens this node holds in live slices of `key` (the simulator's bound), or of all keys.
  int64_t held(std::string_view key, int64_t now_ns);
  int64_t held(int64_t now_ns);

  // Whether a take on `spec` may be decided from a slice: token buckets, GCRA, fixed,
  // calendar and sliding windows, unless the policy says `slices: off`. (Not a sliding log:
  // it keeps each admission's own time, which a slice spent later cannot give it.)
  static bool sliceable(const LimitSpec& spec);

  // The simulator's view of each slice (tests/sim): asked for (`expires_ns` 0), and granted
  // (its tokens, its end on this node's clock). Called under a lock of this object: it
  // must not call back. Set before the node serves; null: none.
  std::function<void(std::string_view key, int64_t tokens, int64_t expires_ns)> observe;

  // /metrics: slices asked for and granted, their tokens, takes admitted from them.
  std::atomic<uint64_t> asked{0}, granted_slices{0}, granted_tokens{0}, admitted{0};

 private:
  struct Hot {
    LimitSpec spec;
    int64_t window_start = 0, count = 0;  // forwards in the current tenth of a second
    int64_t rate = 0;                     // forwards a second, the last tenth's
    int64_t last_seen = 0;
    int64_t tokens = 0, expires = 0;  // the live slice
    int64_t remaining = -1;           // the owner's, at its last answer (-1: unknown)
    int64_t limit = 0, reset_at = 0;  // for the decisions a slice makes
    bool asking = false;
  };
  struct Stripe {
    std::mutex mu;
    std::unordered_map<std::string, Hot> keys;
    int64_t swept_ns = 0;  // when its idle keys were last let go
  };
  static constexpr size_t kStripes = 16;
  static constexpr size_t kKeysPerStripe = 1024;  // keys watched at once (the hottest stay)
  Stripe& stripe(std::string_view key);

  std::atomic<int64_t> threshold_{0};
  std::atomic<int64_t> slice_ns_{100'000'000};
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace fg
