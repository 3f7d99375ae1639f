// All or nothing over several limits, in the node (FG.TAKEALL): every limit is reserved on
// its key's owner in one round; if all allow, every reservation is committed, else the ones
// taken are cancelled. The answer "allowed" is given only once every commit is acknowledged:
// a charge the caller was told about is never missing. What can be over-counted, and for
// how long:
//   - a reservation whose cancel is lost, or whose asking node dies before committing or
//     cancelling, counts until it expires (kTakeAllReserveMs), then gives back what it took;
//   - a commit that fails (its owner died and no copy kept the reservation, or it expired):
//     the commits that succeeded are refunded (FG.ADJUST by -cost) and the caller is told
//     the error; the failed one's reservation, if any copy kept it, expires as above.
// So it over-counts for at most a reservation's lifetime, and never under-counts.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "request_core.hpp"

namespace fg {

constexpr int64_t kTakeAllReserveMs = 5000;  // how long an uncommitted reservation holds
constexpr size_t kMaxTakeAll = 64;           // limits in one FG.TAKEALL

struct TakeAllResult {
  bool allowed = false;
  std::string error;                  // set when a limit could not be decided (or committed)
  std::vector<Decision> decisions;    // one per limit, in order (when no error)
  std::vector<FailMode> unavailable;  // per limit: a fail mode answered for it
};

struct TakeAllItem {
  std::string key;
  LimitSpec spec;
};

// Runs on `lane`; `done` is called there once. `asker`/`command` as a Request's (the ACL
// checks run on each reservation).
void take_all(Services& svc, Lane& lane, std::vector<TakeAllItem> items, int64_t cost,
              const AclUser* asker, Door door, std::function<void(TakeAllResult)> done);

}  // namespace fg
