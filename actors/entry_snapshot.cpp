// Converting between in-table entries and snapshots.
#include "entry_snapshot.hpp"

#include "value_kinds.hpp"

namespace fg {

size_t snapshot_field_count(Kind k) { return static_cast<size_t>(kind_row(k).fields); }

EntrySnapshot snapshot_of(Entry& e) {
  EntrySnapshot s;
  s.key = std::string(e.key());
  s.kind = e.kind;
  s.expires_ms = e.deadline_ms();
  s.account = e.account();
  kind_row(e.kind).snapshot(e, s);
  return s;
}

void restore_into(Entry& e, const EntrySnapshot& s) { kind_row(s.kind).restore(e, s); }

}  // namespace fg
