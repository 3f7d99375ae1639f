// A key's state (a limiter's, or a data command's value) as plain data, for moving or copying it to
// another node (slot hand-off, replication). Carries only what decides the future: idle state is
// never shipped, and a sliding log carries only its live entries.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "key_table.hpp"
#include "lease_set.hpp"

namespace fg {

struct EntrySnapshot {
  std::string key;
  Kind kind = Kind::kNone;
  // The kind's integers, in declaration order of its state struct:
  //   token_bucket {full_at_ns}  gcra {tat_ns}  fixed_window {window_end_ns, count}
  //   sliding_window {start_ns, window_ns, curr, prev}  sliding_log {window_ns}
  std::vector<int64_t> fields;
  std::vector<std::pair<int64_t, int64_t>> log;  // sliding_log: (at_ns, cost), oldest first
  std::vector<Lease> leases;                     // concurrency
  std::string value;                             // string
  std::vector<std::pair<std::string, std::string>> hash;  // hash: fields in order
  std::vector<std::pair<std::string, double>> zset;       // zset: members, by score
  std::vector<std::string> list;                          // list: head first; set: members
  int64_t expires_ms = 0;  // the key's deadline (EXPIRE), Unix ms; 0: none
  // Whose the key was (accounts.hpp) when the snapshot was taken here; never sent or saved
  // (a copy from elsewhere is no one's).
  uint16_t account = 0;

  bool operator==(const EntrySnapshot& o) const {
    return key == o.key && kind == o.kind && fields == o.fields && log == o.log &&
           value == o.value && hash == o.hash && zset == o.zset && list == o.list &&
           expires_ms == o.expires_ms && leases.size() == o.leases.size() &&
           std::equal(
               leases.begin(), leases.end(), o.leases.begin(), [](const Lease& a, const Lease& b) {
                 return a.id == b.id && a.expires_at_ns == b.expires_at_ns && a.holder == b.holder;
               });
  }
};

// Number of integer fields a kind's snapshot must carry.
size_t snapshot_field_count(Kind k);
EntrySnapshot snapshot_of(Entry& e);
// Writes a snapshot's state into a fresh entry of the same kind and key.
void restore_into(Entry& e, const EntrySnapshot& s);

}  // namespace fg
