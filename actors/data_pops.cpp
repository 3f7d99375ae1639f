// Pops from the first of several keys that holds anything — lists' and sorted sets' alike:
// BLPOP, BRPOP, BZPOPMIN, BZPOPMAX (one attempt each: the connection waits and tries again),
// LMPOP, ZMPOP, BLMPOP, BZMPOP.
#include <algorithm>

#include "errors.hpp"
#include "list_value.hpp"
#include "shard.hpp"
#include "words.hpp"
#include "zset_value.hpp"

namespace fg {

// One attempt of BLPOP, BRPOP, BZPOPMIN or BZPOPMAX key ... timeout: from the first key that
// holds anything, [key, element] or [key, member, score]; a null array when none does (the
// connection then waits and tries again). A key of another type is -WRONGTYPE when reached.
void Shard::block_pop(ShardOp& op, int64_t now_ns) {
  const bool zset = op.data == DataCmd::kBZPopMin || op.data == DataCmd::kBZPopMax;
  const bool low = op.data == DataCmd::kBLPop || op.data == DataCmd::kBZPopMin;
  pop_first(op, 1, op.args->size() - 1, zset, low, 1, false, now_ns);
}

// Pops up to `count` from the first of keys [first, end) that holds anything (a sorted set
// with `zset`, else a list; from its low end with `low`): [key, [elements or (member,
// score) pairs]] when `nested` (ZMPOP, LMPOP), else [key, element] or [key, member, score]
// (one pop: BLPOP, BZPOPMIN); a null array when none holds anything. A key of another type is
// -WRONGTYPE when reached.
void Shard::pop_first(ShardOp& op, size_t first, size_t end, bool zset, bool low, int64_t count,
                      bool nested, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  for (size_t j = first; j < end; ++j) {
    const std::string_view key = a[j];
    Shard& s = *holder_of(key);
    const uint64_t h = KeyTable::hash(key);
    Entry* e = s.lookup(key, h, now_ns);
    if (!e) continue;
    if (e->kind != (zset ? Kind::kZSet : Kind::kList)) {
      op.status = OpStatus::kWrongType;
      return;
    }
    const int64_t size = zset ? static_cast<int64_t>(e->state<ZSetValue*>()->size())
                              : static_cast<int64_t>(e->state<ListValue*>()->items.size());
    const int64_t n = std::min(count, size);
    if (nested) {
      r.array(2);
      r.bulk(key);
      r.array(n);
    } else {
      r.array(zset ? 3 : 2);
      r.bulk(key);
    }
    for (int64_t k = 0; k < n; ++k) {
      if (zset) {
        ZSetValue& z = *e->state<ZSetValue*>();
        const std::pair<double, std::string> m = low ? *z.by_score.begin() : *z.by_score.rbegin();
        if (nested) r.array(2);
        r.bulk(m.second);
        r.dbl(m.first);
        z.erase(m.second);
      } else {
        r.bulk(e->state<ListValue*>()->pop(low));
      }
    }
    s.settle(e, key, h, n == size);
    return;
  }
  r.null_array();
}

// ZMPOP numkeys key ... MIN|MAX [COUNT n] and LMPOP numkeys key ... LEFT|RIGHT [COUNT n]
// (zmpopGenericCommand, lmpopGenericCommand): from the first key that holds anything, up to
// n members (with their scores) or elements, as [key, [...]]; a null array when none does.
void Shard::multi_pop(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const bool zset = op.data == DataCmd::kZMPop || op.data == DataCmd::kBZMPop;
  // (BLMPOP and BZMPOP: the timeout first)
  const size_t at = op.data == DataCmd::kBLMPop || op.data == DataCmd::kBZMPop ? 2 : 1;
  int64_t numkeys;
  if (!parse_int(a[at], numkeys) || numkeys < 1) return r.error(err::kNumkeysPositive);
  if (static_cast<uint64_t>(numkeys) >= a.size() - at - 1) return r.error(err::kSyntax);
  const size_t where = at + 1 + static_cast<size_t>(numkeys);
  bool low;  // MIN, LEFT
  if (iequals(a[where], zset ? "min" : "left")) {
    low = true;
  } else if (iequals(a[where], zset ? "max" : "right")) {
    low = false;
  } else {
    return r.error(err::kSyntax);
  }
  int64_t count = -1;
  for (size_t j = where + 1; j < a.size(); ++j) {
    if (count == -1 && iequals(a[j], "count") && j + 1 < a.size()) {
      if (!parse_int(a[++j], count) || count < 1) return r.error(err::kCountPositive);
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (count == -1) count = 1;
  pop_first(op, at + 1, where, zset, low, count, true, now_ns);
}

}  // namespace fg
