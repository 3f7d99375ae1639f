// One call of the client: its request, already in native.proto's wire form, where it may go,
// its deadline, and who hears the answer.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "floodgate/client.hpp"
#include "native.pb.h"
#include "native_wire.hpp"

namespace floodgate {

namespace pb = floodgate::native;
using Clock = std::chrono::steady_clock;
using Done = std::function<void(Status, const std::string&, const fg::wire::ResultView*)>;

constexpr uint32_t kNoSlot = 0xffffffff;

// Deadlines need milliseconds, not nanoseconds: the coarse clock is several times cheaper.
inline Clock::time_point coarse_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

class CallPtr;

// Call::clear() puts every field back as declared here: a field added here is reset there.
struct Call {
 private:
  friend class CallPtr;
  std::atomic<uint32_t> refs_{0};

 public:
  // What an answer touches comes first: a pipeline's calls wait long enough to have left
  // the cache, and the answer then reads one or two lines, not all of them.
  bool finished = false;
  // Who hears the answer: most calls want a Decision or a number; the rest see the result.
  enum class Want : uint8_t { kDecision, kValue, kRaw } want = Want::kRaw;
  bool keyed = false;
  bool via_peer = false;  // sent with `forward` set to a node that is not the owner
  // A failed attempt went out and was lost with its connection: the node may have counted
  // it, so if the call fails in the end it fails as kTimeout, not kUnavailable.
  bool maybe_counted = false;
  bool why_from_node = false;
  bool no_retry = false;  // a question for one node (topology): fail, do not wait
  int attempts = 0;
  uint32_t slot = kNoSlot;  // kNoSlot: not known yet (or not keyed)
  Callback<Decision> on_decision;
  Callback<int64_t> on_value;
  Done done;
  Clock::time_point deadline;
  std::string req;   // the encoded pb::Request
  std::string addr;  // set: goes to this node address (topology questions)
  // Why the last attempt failed; a node's own words win over a socket's.
  std::string why;

  // A fresh call: one the calling thread used before, when it has one (its strings keep
  // their buffers), so a steady stream of calls allocates nothing.
  static CallPtr make();

 private:
  void clear();  // back to a fresh call's state; what the callbacks held is let go
  static void recycle(Call* c);

 public:
  // Asks the CPU to bring in what an answer to this call reads.
  void prefetch() const {
    __builtin_prefetch(this);
    __builtin_prefetch(reinterpret_cast<const char*>(this) + 64);
  }
};

// Shared ownership of a Call, as std::shared_ptr would give, but a call whose last owner
// lets go goes back to that thread's pool instead of the heap.
class CallPtr {
 public:
  CallPtr() = default;
  CallPtr(std::nullptr_t) {}  // NOLINT: as shared_ptr
  explicit CallPtr(Call* c) : c_(c) {
    if (c_) c_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  CallPtr(const CallPtr& o) : CallPtr(o.c_) {}
  CallPtr(CallPtr&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  CallPtr& operator=(CallPtr o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  ~CallPtr() {
    if (c_ && c_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) Call::recycle(c_);
  }
  Call* get() const { return c_; }
  Call* operator->() const { return c_; }
  Call& operator*() const { return *c_; }
  explicit operator bool() const { return c_ != nullptr; }

 private:
  Call* c_ = nullptr;
};

// A request before encoding.
struct Req {
  pb::Op op = pb::OP_UNKNOWN;
  std::string_view key;
  const Limit* limit = nullptr;
  bool has_cost = false;
  int64_t cost = 1;
  int64_t ttl_ms = 0;
  uint64_t lease = 0;
  std::string_view holder;
  bool cluster_wide = false;
  int64_t wait_ms = 0;  // TAKE: wait for the admission (its deadline is that much later)
  void encode(std::string& out) const;  // replaces what `out` held
};

inline Req keyed_req(pb::Op op, std::string_view key, const Limit* limit = nullptr) {
  Req r;
  r.op = op;
  r.key = key;
  r.limit = limit;
  return r;
}

// A node's result code as the caller sees it.
Status status_of(int code);
Decision decision_of(const fg::wire::ResultView& r);

}  // namespace floodgate
