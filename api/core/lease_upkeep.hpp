// The node's own work on BOUND leases, done through the request core like any request (a
// holder's heartbeat or release-all, fanned out to every member): renewing those that are
// due while their connections live, releasing a connection's when it closes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "services.hpp"

namespace fg {

// Renews the BOUND holders due at `now_ms` (a third of their TTL since the last renewal).
// Call it every 100 ms or so, from any thread.
void renew_bound_leases(Services& svc, int64_t now_ms);
// Connection `client_id` closed: gives back every lease it took with BOUND, wherever the
// keys live. Any thread.
void release_bound_leases(Services& svc, uint64_t client_id);
// A RESP connection closed while watching `keys` (WATCH): their shards, wherever they live,
// stop keeping versions for it. Any thread.
void release_watches(Services& svc, std::vector<std::string> keys);

}  // namespace fg
