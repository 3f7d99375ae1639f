// One call of the client: its request, already in native.proto's wire form, where it may go,
// its deadline, and who hears the answer.
#pragma once
#include <chrono>
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

struct Call {
  std::string req;          // the encoded pb::Request
  uint32_t slot = kNoSlot;  // kNoSlot: not known yet (or not keyed)
  bool keyed = false;
  bool via_peer = false;  // sent with `forward` set to a node that is not the owner
  std::string addr;       // set: goes to this node address (topology questions)
  Clock::time_point deadline;
  int attempts = 0;
  bool finished = false;
  // A failed attempt went out and was lost with its connection: the node may have counted
  // it, so if the call fails in the end it fails as kTimeout, not kUnavailable.
  bool maybe_counted = false;
  // Why the last attempt failed; a node's own words win over a socket's.
  std::string why;
  bool why_from_node = false;
  bool no_retry = false;  // a question for one node (topology): fail, do not wait
  // Who hears the answer: most calls want a Decision or a number; the rest see the result.
  enum class Want : uint8_t { kDecision, kValue, kRaw } want = Want::kRaw;
  Callback<Decision> on_decision;
  Callback<int64_t> on_value;
  Done done;
};
using CallPtr = std::shared_ptr<Call>;

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
  std::string encode() const;
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
