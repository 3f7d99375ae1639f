// The kinds table: each kind's row (value_kinds.hpp), at its kind's index. A new kind of
// value is a Kind, its row in its own file, and its line here.
#include "value_kinds.hpp"

namespace fg {

const KindRow* const kKindRows[static_cast<size_t>(kLastKind) + 1] = {
    &kNoneKind,            // kNone
    &kTokenBucketKind,     // kTokenBucket
    &kGcraKind,            // kGcra
    &kFixedWindowKind,     // kFixedWindow
    &kSlidingLogKind,      // kSlidingLog
    &kSlidingWindowKind,   // kSlidingWindow
    &kConcurrencyKind,     // kConcurrency
    &kStringKind,          // kString
    &kHashKind,            // kHash
    &kZSetKind,            // kZSet
    &kListKind,            // kList
    &kSetKind,             // kSet
    &kCalendarWindowKind,  // kCalendarWindow
    &kStreamKind,          // kStream
};

bool kind_rows_in_order() {
  for (size_t i = 0; i <= static_cast<size_t>(kLastKind); ++i) {
    const KindRow* row = kKindRows[i];
    if (!row || static_cast<size_t>(row->kind) != i) return false;
    // (a limiter takes, charges and gives back; a data type does none of them)
    const bool limiter = row->take != nullptr;
    if ((row->adjust != nullptr) != limiter || (row->refund != nullptr) != limiter) return false;
    if (!row->idle || !row->usage || !row->snapshot || !row->restore) return false;
  }
  return true;
}

}  // namespace fg
