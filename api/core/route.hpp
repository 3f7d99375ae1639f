// The route step: given the routing snapshot, where a keyed request goes — served here,
// sent to its owner (forwarded, or the client told -MOVED), or answered now because no copy
// of its slot's state can be reached (the policy's fail mode decides) or the tables
// disagree. Pure: no clock read, no I/O.
#pragma once
#include <cstdint>
#include <string>

#include "request.hpp"
#include "routing.hpp"

namespace fg {

// A request is forwarded at most this many times: once from the node a client talks to,
// once more if the slot moved on while it travelled. Tables that disagree longer than
// that get -TRYAGAIN rather than a loop.
constexpr uint32_t kMaxForwardHops = 2;

// What a door wants done with a key another node owns.
enum class RouteMode : uint8_t {
  kForward,  // send it to the owner and relay the answer (plain RESP clients, other nodes)
  kMove,     // tell the client where it lives (cluster-aware RESP clients, native clients)
};

struct RouteDecision {
  enum class Action : uint8_t {
    kServe,        // this node owns and serves the slot
    kForward,      // to rt.nodes[node]
    kMove,         // -MOVED to rt.nodes[node]
    kUnavailable,  // no copy reachable: the policy's fail mode, else `code` + `error`
    kRefuse,       // answer `code` + `error`
  };
  Action action = Action::kServe;
  int node = -1;  // the owner's index in rt.nodes
  Code code = Code::kOk;
  std::string error;
};

// `hops`: forwards the request already took to get here. `now_ns` on the node's clock
// (for the stall guard, Routing::can_serve).
RouteDecision route(const Routing& rt, uint32_t slot, RouteMode mode, uint32_t hops,
                    int64_t now_ns);

// Whether a keyed request for `slot` must wait before being routed: this node owns it in
// the table and its state is on its way here (from the previous owner, within
// await-timeout). Doors hold such requests and try again a few milliseconds later.
inline bool must_wait(const Routing& rt, uint32_t slot) {
  return rt.epoch > 0 && static_cast<int>(rt.owner[slot]) == rt.self_index &&
         !rt.serving.test(slot) && rt.awaiting.test(slot);
}

}  // namespace fg
