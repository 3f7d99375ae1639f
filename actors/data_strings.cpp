// The string commands that read or edit part of a value: APPEND, STRLEN, GETRANGE (and its
// old name SUBSTR), SETRANGE, GETSET — Redis 7.0's t_string.c: its replies, its errors,
// its order of checks. A value grown a piece at a time is held to proto-max-bulk-len
// (Shard::set_max_string), as Redis holds it, so a few small commands cannot make a node
// keep a huge value.
#include <climits>

#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "merge.hpp"
#include "shard.hpp"
#include "string_value.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

namespace {
// Redis's getLongFromObjectOrReply (a long is 64 bits here, as on Redis's Linux builds).
bool parse_long(std::string_view s, int64_t& out) { return parse_int(s, out); }
}  // namespace

void Shard::data_string_edit(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  std::string buf;
  if (c == DataCmd::kGetRange || c == DataCmd::kSubstr) {
    int64_t start, end;
    if (!parse_long(a[2], start) || !parse_long(a[3], end)) return r.error(err::kNotInteger);
    Entry* e = lookup(op.key, op.hash, now_ns);
    if (!e) return r.bulk("");
    if (e->kind != Kind::kString) {
      op.status = OpStatus::kWrongType;
      return;
    }
    const std::string_view v = string_get(*e, buf);
    const auto len = static_cast<int64_t>(v.size());
    if (start < 0 && end < 0 && start > end) return r.bulk("");
    if (start < 0) start = len + start;
    if (end < 0) end = len + end;
    if (start < 0) start = 0;
    if (end < 0) end = 0;
    if (end >= len) end = len - 1;
    if (start > end || len == 0) return r.bulk("");
    return r.bulk(v.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
  }
  if (c == DataCmd::kSetRange) {
    int64_t offset;
    if (!parse_long(a[2], offset)) return r.error(err::kNotInteger);
    if (offset < 0) return r.error(err::kOffsetOutOfRange);
    const std::string_view value = a[3];
    Entry* e = lookup(op.key, op.hash, now_ns);
    if (e && e->kind != Kind::kString) {
      op.status = OpStatus::kWrongType;
      return;
    }
    const size_t before = e ? string_get(*e, buf).size() : 0;
    if (value.empty()) return r.integer(static_cast<int64_t>(before));
    if (static_cast<uint64_t>(offset) + value.size() > max_string_) {
      return r.error(err::kStringTooLong);
    }
    std::string next(e ? string_get(*e, buf) : std::string_view());
    const size_t end = static_cast<size_t>(offset) + value.size();
    if (next.size() < end) next.resize(end, '\0');
    next.replace(static_cast<size_t>(offset), value.size(), value);
    e = overwrite_string(op, op.key, op.hash, next, true, now_ns);
    if (!e) return;
    e->flags = static_cast<uint8_t>(e->flags | kEntryRaw);
    return r.integer(static_cast<int64_t>(next.size()));
  }
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (e && e->kind != Kind::kString) {
    op.status = OpStatus::kWrongType;
    return;
  }
  switch (c) {
    case DataCmd::kStrlen:
      return r.integer(e ? static_cast<int64_t>(string_get(*e, buf).size()) : 0);
    case DataCmd::kAppend: {
      const std::string_view add = a[2];
      if (!e) {
        if (!overwrite_string(op, op.key, op.hash, add, false, now_ns)) return;
        return r.integer(static_cast<int64_t>(add.size()));
      }
      const std::string_view cur = string_get(*e, buf);
      if (cur.size() + add.size() > max_string_) return r.error(err::kStringTooLong);
      std::string next;
      next.reserve(cur.size() + add.size());
      next.append(cur).append(add);
      e = overwrite_string(op, op.key, op.hash, next, true, now_ns);
      if (!e) return;
      e->flags = static_cast<uint8_t>(e->flags | kEntryRaw);
      return r.integer(static_cast<int64_t>(next.size()));
    }
    default: {  // GETSET: the old value (or nil), then SET without keeping the TTL
      if (!e && !room_for_key(op, now_ns)) return;  // (before any reply: the key cap's error)
      if (e) {
        r.bulk(string_get(*e, buf));
      } else {
        r.null();
      }
      overwrite_string(op, op.key, op.hash, a[2], false, now_ns);
      return;
    }
  }
}

// Strings' row of the kinds table (value_kinds.hpp): an integer kept as one (the entry's
// bytes) until it is set to text, which the entry points to.
namespace {
void string_make(Entry& e) { e.flags = kEntryInt; }  // (the integer 0 until it is set)
bool string_idle(const Entry&, int64_t) { return false; }
uint64_t string_bytes(const Entry& e) {
  return string_is_int(e) ? 0 : sizeof(std::string) + e.state<StringState>().s->capacity();
}
int64_t string_usage(Entry& e) {
  if (string_is_int(e)) return 0;
  std::string buf;
  return 32 + static_cast<int64_t>(string_get(e, buf).size());
}
// As redis-server 7.0 reports it: int, embstr up to 44 bytes, else raw (and raw once
// appended to or ranged into, kEntryRaw).
const char* string_encoding(Entry& e) {
  if (e.flags & kEntryRaw) return "raw";
  if (string_is_int(e) && !(e.flags & kEntryText)) return "int";
  std::string buf;
  return string_get(e, buf).size() <= 44 ? "embstr" : "raw";
}
void string_snapshot(Entry& e, EntrySnapshot& s) {
  std::string buf;
  s.value = std::string(string_get(e, buf));
}
void string_restore(Entry& e, const EntrySnapshot& s) { string_set(e, s.value); }
// Both integers (INCR counters): the larger; else the serving value.
bool string_merge(EntrySnapshot& into, const EntrySnapshot& from) {
  return merge_value(into.value, from.value);
}
}  // namespace

const KindRow kStringKind = {Kind::kString,
                             sizeof(StringState),
                             0,
                             true,
                             &string_make,
                             &string_free,
                             &string_idle,
                             nullptr,
                             &string_bytes,
                             &string_usage,
                             &string_encoding,
                             &string_snapshot,
                             &string_restore,
                             &string_merge,
                             nullptr,
                             nullptr,
                             nullptr};

}  // namespace fg
