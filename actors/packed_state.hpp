// Changed keys as packed records, the replication stream's compact form: written straight
// from a table entry into one buffer per shard and round, read straight into the replica's
// entries — no snapshot object, no allocation per key on either side.
//
// A record: u8 kind (0: the key is gone), u16 key length, the key; then, for a key that
// stays: i64 deadline (Unix ms, 0: none) and its state — the kind's integers for the
// fixed-size limiters (token bucket 1, GCRA 1, fixed window 2, sliding window 4), for a
// string u8 1 and an i64 (held as an integer) or u8 0, u32 length and the bytes. Integers
// are little-endian. Kinds that hold collections (sliding log, leases, hash, sorted set,
// list) are not packed: they travel as snapshots (state_codec).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "entry_snapshot.hpp"
#include "key_table.hpp"

namespace fg {

// Whether `k`'s state goes as a packed record.
bool packable(Kind k);
// Appends `e`'s record (its kind must be packable).
void pack_entry(Entry& e, std::string& out);
// Appends a record saying `key` is gone.
void pack_gone(std::string_view key, std::string& out);

struct PackedRecord {
  Kind kind = Kind::kNone;  // kNone: the key is gone
  std::string_view key;
  int64_t deadline_ms = 0;
  int64_t ints[4] = {0, 0, 0, 0};  // a limiter's integers, or a string's integer value
  bool is_int = false;             // a string held as an integer (ints[0])
  std::string_view bytes;          // a string's bytes otherwise
  size_t size = 0;                 // the record's length in the buffer
};

// Reads the record at the front of `in`. False if it is malformed or cut short (an unknown
// kind, a key longer than kMaxKeyLen, a negative deadline, lengths past the end).
bool read_packed(std::string_view in, PackedRecord& r);

// Writes a record's state into a fresh or same-kind entry (deadline excluded: the table
// keeps that).
void restore_packed(Entry& e, const PackedRecord& r);

// What one shard's served keys did since the replication stream last asked: packed
// records (each marked with its slot, so the stream can route it to that slot's replicas
// without reading it again), and snapshots of changed keys whose kind is not packed. Kept
// by the stream from round to round, so its buffers stop growing once warm.
struct ShardChanges {
  struct Mark {
    size_t offset;
    size_t size;
    uint32_t slot;
  };
  std::string packed;
  std::vector<Mark> marks;
  std::vector<EntrySnapshot> snapshots;
  bool complete = true;  // false: more changed than could be tracked (replicas need a copy)

  void clear();
};

}  // namespace fg
