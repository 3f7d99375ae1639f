// One row per kind of value a key can hold — each limiter, each data type — saying
// everything the shard, the copies and the disk need of it: how its state is made and freed
// in an entry, when it has nothing left to keep, what it weighs, how it is copied out and
// back (snapshots: replication, hand-off, persistence), how two copies merge, and its
// encoding's name. A kind's row is written in its own file (the data types' in their
// data_<type>.cpp, the limiters' in limiter_kinds.cpp) and listed once, in Kind's order, in
// value_kinds.cpp; nothing else switches on a key's kind to handle its value.
#pragma once
#include <cstddef>
#include <cstdint>

#include "decision.hpp"
#include "limit_spec.hpp"

namespace fg {

struct Entry;
struct EntrySnapshot;
struct ShardOp;

struct KindRow {
  Kind kind;
  size_t state_size;  // bytes its state takes inside the entry
  int fields;         // integers its snapshot carries (EntrySnapshot::fields)
  bool packed;        // its state packs into a fixed-size record (packed_state.hpp)
  // Fills a fresh entry's state (zeroed bytes before); null: zeros are its empty state.
  void (*make)(Entry&);
  // Gives back what its state holds outside the entry; null: nothing.
  void (*free)(Entry&);
  // Nothing left worth keeping at `now_ns` (an empty container, a limiter back at rest).
  bool (*idle)(const Entry&, int64_t now_ns);
  // When a limiter is back at rest, Unix ns (0: data, or nothing pending).
  int64_t (*rest_at_ns)(Entry&);
  // Bytes its value holds beyond the entry, in constant time (maxmemory's weight); null for
  // a kind whose value never grows after the key is made.
  uint64_t (*heap_bytes)(const Entry&);
  // MEMORY USAGE's estimate of its value, element by element (beyond the entry and key).
  int64_t (*usage)(Entry&);
  // OBJECT ENCODING's answer (null: the kind's name).
  const char* (*encoding)(Entry&);
  void (*snapshot)(Entry&, EntrySnapshot&);             // its state into a snapshot
  void (*restore)(Entry&, const EntrySnapshot&);        // a snapshot's state into a fresh entry
  bool (*merge)(EntrySnapshot&, const EntrySnapshot&);  // merge.hpp's rule (null: the serving copy)
  // Limiters (null for data types): a take or peek on `state` (the entry's bytes or a
  // scratch copy), a charge (FG.ADJUST, a waiting take's reservation), a refund (a
  // reservation given back).
  Decision (*take)(unsigned char* state, const ShardOp& op, int64_t now_ns, bool dry);
  void (*adjust)(Entry&, const LimitSpec&, int64_t delta, int64_t now_ns);
  void (*refund)(Entry&, const LimitSpec&, int64_t cost, int64_t taken_ns, int64_t now_ns);
};

// The rows, indexed by Kind (value_kinds.cpp).
extern const KindRow* const kKindRows[static_cast<size_t>(kLastKind) + 1];
extern const KindRow kNoneKind;
// (a number past the last kind, which no decoder lets through, is no kind)
inline const KindRow& kind_row(Kind k) {
  const auto i = static_cast<size_t>(k);
  return i <= static_cast<size_t>(kLastKind) ? *kKindRows[i] : kNoneKind;
}
// Whether each row sits at its kind's index (checked once by every shard; a test too).
bool kind_rows_in_order();

// Each kind's row, defined in its own file.
extern const KindRow kNoneKind, kTokenBucketKind, kGcraKind, kFixedWindowKind, kSlidingLogKind,
    kSlidingWindowKind, kConcurrencyKind, kCalendarWindowKind;  // limiter_kinds.cpp
extern const KindRow kStringKind;                               // data_strings.cpp
extern const KindRow kHashKind;                                 // data_hash.cpp
extern const KindRow kZSetKind;                                 // data_zset.cpp
extern const KindRow kListKind;                                 // data_list.cpp
extern const KindRow kSetKind;                                  // data_set.cpp
extern const KindRow kStreamKind;                               // data_stream.cpp

}  // namespace fg
