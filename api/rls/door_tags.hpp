// What the gateway door's completion queue hands back (rls_door.cpp serves it): a call of
// one of its methods, of any other method, a quota-service stream's step, or the end of the
// server's shutdown.
#pragma once
#include <cstdint>

namespace fg {

struct DoorTag {
  enum class What : uint8_t { kRls, kHealth, kOther, kRlqs, kShutdown } what;
  bool finishing = false;  // its answer is on its way: the next completion is its last
  explicit DoorTag(What w) : what(w) {}
};

}  // namespace fg
