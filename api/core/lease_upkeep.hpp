// The node's own work on BOUND leases, done through the request core like any request (a
// holder's heartbeat or release-all, fanned out to every member): renewing those that are
// due while their connections live, releasing a connection's when it closes; and giving
// back a lease no replica acknowledged, whose asker was told it did not get it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "shard_op.hpp"

namespace fg {

struct Services;

// Renews the BOUND holders due at `now_ms` (a third of their TTL since the last renewal).
// Call it every 100 ms or so, from any thread.
void renew_bound_leases(Services& svc, int64_t now_ms);
// Connection `client_id` closed: gives back every lease it took with BOUND, wherever the
// keys live. Any thread.
void release_bound_leases(Services& svc, uint64_t client_id);
// Leases `b` granted that no replica acknowledged in time (OpStatus::kNotReplicated): their
// askers are told they did not get them, so they go back now rather than at their TTL.
// Any thread.
void give_back_unreplicated(Services& svc, const Batch& b);
// A RESP connection closed while watching `keys` (WATCH): their shards, wherever they live,
// stop keeping versions for it. Any thread.
void release_watches(Services& svc, std::vector<std::string> keys);

// A take that waits for its admission (FG.TAKE ... WAIT) and will not be answered — its
// connection closed, or no place was left to wait in: its reserved cost is given back
// (FG.ADJUST by -cost), so a later arrival may have it. Any thread.
struct Waiter {
  std::string key;
  LimitSpec spec;
  int64_t cost = 0;
};
void give_back_waits(Services& svc, std::vector<Waiter> waiters);

}  // namespace fg
