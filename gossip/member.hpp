// A cluster member as one node sees it.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace fg {

enum class MemberState : uint8_t { kAlive = 0, kSuspect = 1, kDead = 2, kLeft = 3 };

struct Member {
  std::string id;
  std::string addr;       // gossip (UDP) address
  std::string resp_addr;  // client address
  int native_port = 0;    // native-protocol port on resp_addr's host; 0 = none
  MemberState state = MemberState::kAlive;
  uint64_t incarnation = 0;
  int64_t changed_ns = 0;          // when `state` last changed, by the local clock
  std::string accuser;             // on the wire: who raised this suspicion
  std::set<std::string> accusers;  // locally: everyone known to suspect this incarnation
  int64_t acked_ns = 0;            // locally: when one of our probes of it was last answered

  bool live() const { return state == MemberState::kAlive || state == MemberState::kSuspect; }
};

inline std::string_view state_name(MemberState s) {
  switch (s) {
    case MemberState::kAlive:
      return "alive";
    case MemberState::kSuspect:
      return "suspect";
    case MemberState::kDead:
      return "dead";
    case MemberState::kLeft:
      return "left";
  }
  return "?";
}

}  // namespace fg
