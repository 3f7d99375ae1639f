// Lists, as Redis's t_list.c: LPUSH RPUSH LPOP RPOP LLEN LRANGE LTRIM LINDEX, each checking
// its arguments and the key in Redis's order.
#include "errors.hpp"
#include "list_value.hpp"
#include "shard.hpp"
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
    case DataCmd::kRPush: {
      ListValue* l = existing(e);
      if (op.status != OpStatus::kOk) return;
      if ((l ? l->items.size() : 0) + (a.size() - 2) > kMaxListElements) {
        return r.error(err::collection_full("a list", kMaxListElements, "elements"));
      }
      if (!l) {
        e = typed(op, Kind::kList, true, now_ns);
        if (!e) return;
        l = e->state<ListValue*>();
      }
      for (size_t j = 2; j < a.size(); ++j) {
        if (c == DataCmd::kLPush) {
          l->items.emplace_front(a[j]);
        } else {
          l->items.emplace_back(a[j]);
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
      auto pop = [&] {
        std::string v = std::move(head ? l->items.front() : l->items.back());
        if (head) {
          l->items.pop_front();
        } else {
          l->items.pop_back();
        }
        return v;
      };
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
  } else {
    l->items.erase(l->items.begin() + end + 1, l->items.end());
    l->items.erase(l->items.begin(), l->items.begin() + start);
  }
  changed(e, *l);
  r.ok();
}

}  // namespace fg
