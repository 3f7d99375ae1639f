// What one user may take of each node-wide cap: the model of tenancy on a shared node.
// Operators and the default user (every command, every key, every channel: unrestricted)
// take what the node has; every other user takes at most its share (user-share: a fraction
// of each cap) or the numbers user-limits names for it. The caps are set per user in the
// node's Accounts (actors/accounts.hpp), where every door and shard counts what each user
// holds: keys, bytes, scripts in the cache, waiting takes, connections, subscriptions.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "accounts.hpp"
#include "result.hpp"

namespace fg {

class AclBook;

// The node-wide caps a share is taken of (INT64_MAX or 0 where the node has none: no share).
struct NodeCaps {
  std::array<int64_t, Accounts::kMeters> of{};
};

// One user-limits line: "name keys=N bytes=SIZE scripts=N script-bytes=SIZE waiters=N
// connections=N subscriptions=N" (any of them; the rest follow user-share).
struct UserLimits {
  std::string user;
  std::array<int64_t, Accounts::kMeters> caps;  // -1: the share
  UserLimits() { caps.fill(-1); }
};
Result<UserLimits> parse_user_limits(std::string_view line);
// The meter's word in user-limits lines and INFO ("keys", "bytes", ...).
const char* meter_name(Accounts::Meter m);

// Sets every user's caps in `accounts`: none for unrestricted users, else the user's
// user-limits line where it names one, else `share` of the node's cap.
void apply_user_shares(const AclBook& users, const NodeCaps& node, double share,
                       const std::vector<UserLimits>& limits, Accounts& accounts);

}  // namespace fg
