// Merging two copies of a key's state (merge.hpp has the rules).
#include "merge.hpp"

#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

bool merge_value(std::string& mine, const std::string& theirs) {
  int64_t a = 0;
  int64_t b = 0;
  if (mine.size() <= 20 && theirs.size() <= 20 && parse_int(mine, a) && parse_int(theirs, b) &&
      b > a) {
    mine = theirs;
    return true;
  }
  return false;
}

namespace {

bool merge_deadline(int64_t& mine, int64_t theirs) {
  if (theirs > 0 && (mine <= 0 || theirs > mine)) {
    mine = theirs;
    return true;
  }
  return false;
}

}  // namespace

bool merge_snapshot(EntrySnapshot& into, const EntrySnapshot& from) {
  if (into.kind == Kind::kNone) {
    into = from;
    return true;
  }
  if (from.kind != into.kind || from.fields.size() != snapshot_field_count(from.kind) ||
      into.fields.size() != snapshot_field_count(into.kind)) {
    return false;  // another kind (or a malformed copy): the serving copy decides
  }
  const auto merge = kind_row(into.kind).merge;  // (none: the serving copy)
  bool changed = merge ? merge(into, from) : false;
  changed |= merge_deadline(into.expires_ms, from.expires_ms);
  return changed;
}

}  // namespace fg
