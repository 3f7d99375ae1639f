// The one request core. A door decodes a request (RESP arguments, a native frame, a forwarded
// batch, the node's own lease renewals) into a Request and hands it here: the core checks it,
// routes it (serve here, forward to the owner, -MOVED, or answer now with the policy's fail
// mode), turns it into a shard operation or a forwarded request in the I/O thread's flight,
// and, once the flight is back, into one Outcome — counting metrics as it goes. The door
// encodes the Outcome. Routing, fail modes, status mapping and metrics exist only here.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <string>

#include "flight.hpp"
#include "request.hpp"
#include "route.hpp"
#include "services.hpp"

namespace fg {

// Where a request came from, as far as the core cares.
struct Door {
  const Routing* routing = nullptr;          // the snapshot in force; null: standalone
  RouteMode mode = RouteMode::kForward;      // for keys another node owns
  bool native_ports = false;                 // -MOVED names native ports (else RESP ports)
  uint32_t hops = 0;                         // forwards taken to get here; 0: a client's own
  uint64_t client_id = 0;                    // the connection, for BOUND leases
  bool count = true;                         // record request metrics (false: another node's)
  std::deque<std::string>* texts = nullptr;  // where the core keeps texts it makes for this
                                             // door's outcomes; the door clears it once they
                                             // are encoded
  int64_t latency_us = 0;                    // arrival to completion (the door sets it)
  // Data replies' room in this batch (ShardOp::reply_room); null: no cap.
  std::atomic<int64_t>* reply_room = nullptr;
};

// A submitted request: answered at once (kNow), or where its outcome will be in the flight.
struct Pending {
  enum class At : uint8_t { kNow, kShard, kForward, kFanout, kData };
  At at = At::kNow;
  Verb verb = Verb::kTake;
  uint16_t metric = 0;
  uint32_t index = 0;  // kShard, kFanout: the op; kData: the first op; kForward: the call
  uint32_t item = 0;   // kForward: the request within the call; kFanout: its first part
  uint32_t parts = 0;  // kFanout: how many other nodes it went to; kData: how many ops
  // kForward: a quota slice of its key was asked for with it (the call's next request).
  bool slice = false;
  bool waits() const { return at != At::kNow; }
};

class RequestCore {
 public:
  explicit RequestCore(Services& svc);

  // Checks and routes `r`. Served here or forwarded, it joins flight `f` (the caller then
  // joins the flight's batcher and calls finish() when it is back); otherwise it is answered
  // in `now` at once. Views in `r` must stay valid until the flight is back.
  Pending submit(const Request& r, const Door& d, Flight& f, Outcome& now);
  // After flight `f` is back: the outcome of a request submit() put in it.
  void finish(const Pending& p, Flight& f, const Door& d, Outcome& out);
  // Keyed requests for `key` must be held back a few milliseconds: its slot's state is on
  // its way to this node (doors check before they consume the request).
  bool must_wait(std::string_view key, const Routing* rt) const;

 private:
  bool check(const Request& r, Outcome& now) const;
  void answer_unavailable(const Request& r, RouteDecision& rd, const Door& d, Outcome& now);
  Pending forward(const Request& r, std::string_view holder, const Door& d, Flight& f,
                  const RouteNode& to, Pending p);
  Pending forward_hot(const Request& r, const Door& d, Flight& f, const RouteNode& to, Pending p,
                      Outcome& now);
  void fan_out(const Request& r, const Door& d, Flight& f, Pending& p);
  static bool one_slot(const Request& r, uint32_t slot);
  Pending serve_data(const Request& r, const Door& d, Flight& f, uint32_t slot, Pending p);
  void merge_data(const Pending& p, Flight& f, Outcome& out);
  // SCAN's cursor: the node's split into a shard and its own, and made again (the request
  // core's half of the SCAN family's bounds: one shard's step per call).
  static uint16_t scan_cursor(Flight& f, ShardOp& op, size_t shards);
  void scan_reply(const ShardOp& op, DataReply& merged) const;
  // The owner's answer to one forwarded request; false if there is none.
  bool from_forward(Flight& f, uint32_t call, uint32_t item, Outcome& out);
  static std::string_view silence(const Flight& f, uint32_t call);
  void conclude(const Pending& p, Outcome& out, bool shadow, uint16_t policy, std::string_view key,
                const Door& d) const;
  void count(const Pending& p, const Outcome& out, uint16_t policy, std::string_view key,
             const Door& d) const;

  Services& svc_;
  class RequestMetrics& metrics_;
};

// A limit's "limit" as replies report it (GCRA: max_burst + 1, as redis-cell).
int64_t reported_limit(const LimitSpec& spec);

}  // namespace fg
