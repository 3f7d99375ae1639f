// Lists, as Redis's t_list.c: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LTRIM LINDEX
// LSET LINSERT LREM LPOS, each checking its arguments and the key in Redis's order.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "list_value.hpp"
#include "shard.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

void Shard::data_list(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  // The key's list, or null; -WRONGTYPE (in op.status) for another type.
  auto existing = [&](Entry*& e) -> ListValue* {
    e = typed(op, Kind::kList, false, now_ns);
    return e ? e->state<ListValue*>() : nullptr;
  };
  auto changed = [&](Entry* e, ListValue& l) {
    if (l.items.empty()) {
      forget(op.key, op.hash);
      mark_gone(op.key);
    } else {
      mark(e, op.key);
    }
  };
  Entry* e = nullptr;
  switch (c) {
    case DataCmd::kLPush:
    case DataCmd::kRPush:
    case DataCmd::kLPushX:
    case DataCmd::kRPushX: {
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      const bool only_existing = c == DataCmd::kLPushX || c == DataCmd::kRPushX;
      if (!l && only_existing) return r.integer(0);
      if ((l ? l->items.size() : 0) + (a.size() - 2) > kMaxListElements) {
        return r.error(err::collection_full("a list", kMaxListElements, "elements"));
      }
      if (!l) {
        e = typed(op, Kind::kList, true, now_ns);
        if (!e) return;
        l = e->state<ListValue*>();
      }
      for (size_t j = 2; j < a.size(); ++j) {
        if (c == DataCmd::kLPush || c == DataCmd::kLPushX) {
          l->push_front(a[j]);
        } else {
          l->push_back(a[j]);
        }
      }
      mark(e, op.key);
      return r.integer(static_cast<int64_t>(l->items.size()));
    }
    case DataCmd::kLPop:
    case DataCmd::kRPop: {
      if (a.size() > 3) return r.error(err::wrong_arity(data_cmd_info(c).name));
      const bool has_count = a.size() == 3;
      int64_t count = 0;
      // (Redis's getPositiveLong: one text for not a number and for negative)
      if (has_count && (!parse_int(a[2], count) || count < 0)) return r.error(err::kNotPositive);
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!l) return has_count ? r.null_array() : r.null();
      if (has_count && count == 0) return r.array(0);
      const bool head = c == DataCmd::kLPop;
      auto pop = [&] { return l->pop(head); };
      if (!has_count) {
        r.bulk(pop());
      } else {
        const int64_t n = std::min<int64_t>(count, static_cast<int64_t>(l->items.size()));
        r.array(n);
        for (int64_t k = 0; k < n; ++k) r.bulk(pop());
      }
      return changed(e, *l);
    }
    case DataCmd::kLLen: {
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      return r.integer(l ? static_cast<int64_t>(l->items.size()) : 0);
    }
    case DataCmd::kLIndex: {
      ListValue* l = existing(e);  // (the key before the index, as Redis)
      if (op.status != OpStatus::kOk) return;
      if (!l) return r.null();
      int64_t index;
      if (!parse_int(a[2], index)) return r.error(err::kNotInteger);
      const int64_t len = static_cast<int64_t>(l->items.size());
      if (index < 0) index += len;
      if (index < 0 || index >= len) return r.null();
      return r.bulk(l->items[static_cast<size_t>(index)]);
    }
    case DataCmd::kLSet: {
      ListValue* l = existing(e);  // (the key before the index, as Redis)
      if (op.status != OpStatus::kOk) return;
      if (!l) return r.error(err::kNoSuchKey);
      int64_t index;
      if (!parse_int(a[2], index)) return r.error(err::kNotInteger);
      const int64_t len = static_cast<int64_t>(l->items.size());
      if (index < 0) index += len;
      if (index < 0 || index >= len) return r.error(err::kIndexOutOfRange);
      l->set(static_cast<size_t>(index), a[3]);
      mark(e, op.key);
      return r.ok();
    }
    case DataCmd::kLInsert: {
      const bool after = iequals(a[2], "after");
      if (!after && !iequals(a[2], "before")) return r.error(err::kSyntax);
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!l) return r.integer(0);
      auto it = std::find(l->items.begin(), l->items.end(), a[3]);
      if (it == l->items.end()) return r.integer(-1);
      if (l->items.size() + 1 > kMaxListElements) {
        return r.error(err::collection_full("a list", kMaxListElements, "elements"));
      }
      l->insert(after ? it + 1 : it, a[4]);
      mark(e, op.key);
      return r.integer(static_cast<int64_t>(l->items.size()));
    }
    case DataCmd::kLRem: {
      int64_t count;
      if (!parse_int(a[2], count)) return r.error(err::kNotInteger);
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!l) return r.integer(0);
      // How many to remove: count from the head, -count from the tail, 0 every match.
      const uint64_t most = count == 0  ? UINT64_MAX
                            : count > 0 ? static_cast<uint64_t>(count)
                                        : 0 - static_cast<uint64_t>(count);
      uint64_t removed = 0;
      auto& items = l->items;
      if (count >= 0) {
        for (auto it = items.begin(); it != items.end() && removed < most;) {
          if (*it == a[3]) {
            it = l->erase(it);
            ++removed;
          } else {
            ++it;
          }
        }
      } else {
        for (size_t k = items.size(); k-- > 0 && removed < most;) {
          if (items[k] == a[3]) {
            l->erase(items.begin() + static_cast<std::ptrdiff_t>(k));
            ++removed;
          }
        }
      }
      if (removed > 0) changed(e, *l);
      return r.integer(static_cast<int64_t>(removed));
    }
    default:  // LRANGE, LTRIM
      break;
  }
  int64_t start, end;
  if (!parse_int(a[2], start) || !parse_int(a[3], end)) return r.error(err::kNotInteger);
  ListValue* l = existing(e);
  if (op.status != OpStatus::kOk) return;
  const bool trim = c == DataCmd::kLTrim;
  if (!l) return trim ? r.ok() : r.array(0);
  const int64_t len = static_cast<int64_t>(l->items.size());
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (start < 0) start = 0;
  const bool empty = start > end || start >= len;
  if (!empty && end >= len) end = len - 1;
  if (!trim) {
    if (empty) return r.array(0);
    r.array(end - start + 1);
    for (int64_t k = start; k <= end; ++k) r.bulk(l->items[static_cast<size_t>(k)]);
    return;
  }
  if (empty) {
    l->items.clear();
    l->bytes = 0;
  } else {
    l->keep(static_cast<size_t>(start), static_cast<size_t>(end));
  }
  changed(e, *l);
  r.ok();
}

// LPOS key element [RANK rank] [COUNT n] [MAXLEN len]: the options first (Redis's texts for
// each), then the key; the index of the rank-th match (from the tail for a negative rank),
// or with COUNT an array of up to n of them (0: all), looking at most MAXLEN elements.
void Shard::list_pos(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  int64_t rank = 1, count = -1, maxlen = 0;  // count -1: no COUNT given
  for (size_t j = 3; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (iequals(a[j], "rank") && more) {
      if (!parse_int(a[++j], rank)) return r.error(err::kNotInteger);
      if (rank == 0) return r.error(err::kLposRankZero);
      // (redis-server 7.0 negates the lowest rank to itself, which then takes the first
      // match from the tail: as -1)
      if (rank == INT64_MIN) rank = -1;
    } else if (iequals(a[j], "count") && more) {
      if (!parse_int(a[++j], count) || count < 0) return r.error(err::kLposCountNegative);
    } else if (iequals(a[j], "maxlen") && more) {
      if (!parse_int(a[++j], maxlen) || maxlen < 0) return r.error(err::kLposMaxlenNegative);
    } else {
      return r.error(err::kSyntax);
    }
  }
  const bool from_tail = rank < 0;
  if (from_tail) rank = -rank;
  Entry* e = typed(op, Kind::kList, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  if (!e) return count != -1 ? r.array(0) : r.null();
  const auto& items = e->state<ListValue*>()->items;
  const auto len = static_cast<int64_t>(items.size());
  std::vector<int64_t> found;
  int64_t matches = 0;
  for (int64_t k = 0; k < len && (maxlen == 0 || k < maxlen); ++k) {
    const int64_t at = from_tail ? len - 1 - k : k;
    if (items[static_cast<size_t>(at)] != a[2]) continue;
    if (++matches < rank) continue;
    found.push_back(at);
    if (count == -1 || (count != 0 && static_cast<int64_t>(found.size()) >= count)) break;
  }
  if (count == -1) return found.empty() ? r.null() : r.integer(found.front());
  r.array(static_cast<int64_t>(found.size()));
  for (int64_t at : found) r.integer(at);
}

// Lists' row of the kinds table (value_kinds.hpp). Two copies of a list do not merge (a
// list has no order-free merge): the serving copy stays.
namespace {
ListValue& list_of(const Entry& e) { return *e.state<ListValue*>(); }
void list_make(Entry& e) { e.state<ListValue*>() = new ListValue(); }
void list_free(Entry& e) { delete e.state<ListValue*>(); }
bool list_idle(const Entry& e, int64_t) { return list_of(e).items.empty(); }
uint64_t list_bytes(const Entry& e) { return sizeof(ListValue) + list_of(e).bytes; }
int64_t list_usage(Entry& e) {
  int64_t n = 0;
  for (const auto& v : list_of(e).items) n += 32 + static_cast<int64_t>(v.size());
  return n;
}
const char* list_encoding(Entry&) { return "quicklist"; }  // (Redis 7.0's lists always are)
void list_snapshot(Entry& e, EntrySnapshot& s) {
  const auto& items = list_of(e).items;
  s.list.assign(items.begin(), items.end());
}
void list_restore(Entry& e, const EntrySnapshot& s) {
  list_of(e).items.assign(s.list.begin(), s.list.end());
  list_of(e).recount();
}
}  // namespace

const KindRow kListKind = {Kind::kList,
                           sizeof(ListValue*),
                           0,
                           false,
                           &list_make,
                           &list_free,
                           &list_idle,
                           nullptr,
                           &list_bytes,
                           &list_usage,
                           &list_encoding,
                           &list_snapshot,
                           &list_restore,
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr};

}  // namespace fg
