// Merging two copies of one key's state that grew apart: the serving copy and one that comes
// back (a snapshot a restarted node loaded from disk, the other side of a partition). The
// merge is conservative — what either copy admitted stays admitted — and needs no history:
//
//   token_bucket, gcra      the later "full at" / "theoretical arrival"
//   fixed_window            the later window; the same window: the larger count
//   sliding_window          the later window (the earlier's current count becomes its
//                           previous one); the same window: the larger of each count
//   sliding_log             the union of the entries (an entry in both counts once)
//   concurrency             the union of the leases by id (the same lease: the later expiry);
//                           Shard::merge takes them only into slots started from nothing
//   string                  both integers (INCR counters): the larger; else the serving value
//   hash                    the union of the fields; a field in both: the larger if both are
//                           integers, else the serving value
//   zset                    the union of the members; a member in both: the larger score
//   set                     the union of the members (a member removed on one side only
//                           comes back)
//   list                    the serving copy (a list has no order-free merge)
//   a key of another kind   the serving copy
//   deadline (EXPIRE)       both set: the later; one set: that one (a counter that got its
//                           EXPIRE on one side only must not live forever); neither: none
//
// Where both copies hold the same admissions (copies of one history) the result is that
// history; where each side admitted on its own, counters and instants take the larger side
// (bounded over-admission: see gossip/DESIGN-NOTES.md), logs and leases keep both.
#pragma once
#include "entry_snapshot.hpp"

namespace fg {

// Merges `from` into `into` (same key). True if `into` changed. `into.kind == kNone` (the key
// absent on the serving side) takes `from` whole.
bool merge_snapshot(EntrySnapshot& into, const EntrySnapshot& from);
// A value's text: both integers (as Redis parses them), the larger into `mine`; else `mine`
// stays. True if it changed. (Strings' and hash fields' rule; each kind's own merge is its
// row's, value_kinds.hpp.)
bool merge_value(std::string& mine, const std::string& theirs);

}  // namespace fg
