// Each user's caps, from user-share and user-limits.
#include "user_shares.hpp"

#include <cmath>
#include <sstream>

#include "acl.hpp"
#include "output_limits.hpp"
#include "words.hpp"

namespace fg {

namespace {
constexpr const char* kNames[Accounts::kMeters] = {
    "keys", "bytes", "scripts", "script-bytes", "waiters", "connections", "subscriptions"};
}

const char* meter_name(Accounts::Meter m) { return kNames[m]; }

Result<UserLimits> parse_user_limits(std::string_view line) {
  std::istringstream in{std::string(line)};
  UserLimits out;
  if (!(in >> out.user)) return Error{"must name a user, then limits such as keys=1000"};
  for (std::string w; in >> w;) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos) return Error{"'" + w + "' is not name=value"};
    const std::string name = w.substr(0, eq), value = w.substr(eq + 1);
    int m = 0;
    while (m < Accounts::kMeters && name != kNames[m]) ++m;
    if (m == Accounts::kMeters) {
      return Error{"unknown limit '" + name +
                   "' (keys, bytes, scripts, script-bytes, waiters, connections, subscriptions)"};
    }
    int64_t n = -1;
    if (m == Accounts::kBytes || m == Accounts::kScriptBytes) {
      n = parse_size(value);
    } else if (!parse_int(value, n)) {
      n = -1;
    }
    if (n < 0) return Error{"'" + w + "': must be a number (bytes: a size such as 64mb)"};
    out.caps[static_cast<size_t>(m)] = n;
  }
  return out;
}

void apply_user_shares(const AclBook& users, const NodeCaps& node, double share,
                       const std::vector<UserLimits>& limits, Accounts& accounts) {
  for (const auto& u : users.users()) {
    const UserLimits* own = nullptr;
    for (const UserLimits& l : limits)
      if (l.user == u->name()) own = &l;
    for (int m = 0; m < Accounts::kMeters; ++m) {
      const auto meter = static_cast<Accounts::Meter>(m);
      int64_t cap = INT64_MAX;
      if (own && own->caps[static_cast<size_t>(m)] >= 0) {
        cap = own->caps[static_cast<size_t>(m)];
      } else if (!u->unrestricted() && node.of[static_cast<size_t>(m)] > 0 &&
                 node.of[static_cast<size_t>(m)] < INT64_MAX && share < 1.0) {
        cap = static_cast<int64_t>(
            std::floor(static_cast<double>(node.of[static_cast<size_t>(m)]) * share));
      }
      accounts.set_cap(u->account(), meter, cap);
    }
  }
}

}  // namespace fg
