// The route step as one table of cases, in the order they are tried.
#include "route.hpp"

#include "errors.hpp"

namespace fg {

RouteDecision route(const Routing& rt, uint32_t slot, RouteMode mode, uint32_t hops,
                    int64_t now_ns) {
  using A = RouteDecision::Action;
  RouteDecision d;
  const uint16_t owner = rt.owner[slot];
  if (owner == kNoOwner || rt.epoch == 0) {
    d.action = A::kUnavailable;
    d.code = Code::kClusterDown;
    d.error = err::kClusterDown;
    return d;
  }
  if (!rt.can_serve(now_ns)) {  // no quorum, or the node just woke from a stall
    d.action = A::kUnavailable;
    d.code = Code::kClusterDown;
    d.error = err::kNoQuorum;
    return d;
  }
  d.node = owner;
  if (static_cast<int>(owner) == rt.self_index) {
    if (rt.serving.test(slot)) return d;  // kServe
    if (rt.lost.test(slot)) {             // every copy out of reach: not served from empty yet
      d.action = A::kUnavailable;
      d.code = Code::kTryAgain;
      d.error = err::kSlotLost;
      return d;
    }
    d.action = A::kRefuse;  // (arriving slots wait in the door: must_wait)
    d.code = Code::kTryAgain;
    d.error = err::kSlotMoving;
    return d;
  }
  const RouteNode& node = rt.nodes[owner];
  if (node.state == MemberState::kDead || node.state == MemberState::kLeft) {
    // Its replica takes over once the next table is out (well under a second).
    d.action = A::kUnavailable;
    d.code = Code::kTryAgain;
    d.error = err::owner_down(node.id);
    return d;
  }
  if (mode == RouteMode::kMove && hops == 0) {
    d.action = A::kMove;
    return d;
  }
  if (hops >= kMaxForwardHops) {  // the tables disagree for too long: no loops
    d.action = A::kRefuse;
    d.code = Code::kTryAgain;
    d.error = err::kSlotMoving;
    return d;
  }
  d.action = A::kForward;
  return d;
}

}  // namespace fg
