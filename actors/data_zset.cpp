// Sorted sets, as Redis's t_zset.c: ZADD ZINCRBY ZREM ZCARD ZCOUNT ZSCORE ZMSCORE ZRANK
// ZREVRANK ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZREMRANGEBYSCORE ZREMRANGEBYRANK
// ZPOPMIN ZPOPMAX — the sliding log that limiter code keeps in a sorted set, and the queues
// and counters other libraries keep. Arguments are checked before the key, in Redis's order.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "encoding_thresholds.hpp"
#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "scan_args.hpp"
#include "set_value.hpp"
#include "shard.hpp"
#include "value_kinds.hpp"
#include "words.hpp"
#include "zset_value.hpp"

namespace fg {

namespace {

// Redis's string2d: the whole string, no leading space, no overflow, no NaN.
bool parse_score(std::string_view s, double& out) {
  if (s.empty() || s.size() > 5000 || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  const std::string buf(s);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(buf.c_str(), &end);
  if (static_cast<size_t>(end - buf.c_str()) != buf.size() ||
      (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || std::fpclassify(v) == FP_ZERO)) ||
      std::isnan(v)) {
    return false;
  }
  out = v;
  return true;
}

// Redis's getLongFromObject: a strict decimal integer.
bool parse_long(std::string_view s, int64_t& out) { return parse_int(s, out); }

// One end of a score range as zslParseRange reads it: "(" makes it exclusive; the rest
// through strtod, to its end (so "" is 0 and a leading space is allowed, as there).
bool parse_bound(std::string_view s, double& v, bool& exclusive) {
  exclusive = !s.empty() && s[0] == '(';
  if (exclusive) s.remove_prefix(1);
  const std::string buf(s);
  char* end = nullptr;
  v = std::strtod(buf.c_str(), &end);
  return *end == '\0' && !std::isnan(v);
}

struct ScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;
  bool gte_min(double s) const { return minex ? s > min : s >= min; }
  bool lte_max(double s) const { return maxex ? s < max : s <= max; }
  bool contains(double s) const { return gte_min(s) && lte_max(s); }
};

bool parse_range(std::string_view lo, std::string_view hi, ScoreRange& r) {
  return parse_bound(lo, r.min, r.minex) && parse_bound(hi, r.max, r.maxex);
}

// [start, end] as ranks, clamped as Redis clamps them; false when empty.
bool clamp_ranks(int64_t& start, int64_t& end, int64_t len) {
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (start < 0) start = 0;
  if (start > end || start >= len) return false;
  if (end >= len) end = len - 1;
  return true;
}

using Member = std::pair<double, std::string>;

// A lexicographic range (zslParseLexRange): "[" inclusive or "(" exclusive and the bytes
// after it, or "-" and "+" alone for the lowest and the highest string.
struct LexRange {
  std::string min, max;
  bool minex = false, maxex = false;
  int min_inf = 0, max_inf = 0;  // -1: "-", +1: "+", 0: a string

  static bool parse_item(std::string_view s, std::string& v, bool& ex, int& inf) {
    if (s.empty()) return false;
    switch (s[0]) {
      case '+':
      case '-':
        if (s.size() != 1) return false;
        ex = true;
        inf = s[0] == '+' ? 1 : -1;
        return true;
      case '(':
      case '[':
        ex = s[0] == '(';
        v.assign(s.data() + 1, s.size() - 1);
        return true;
      default:
        return false;
    }
  }
  bool parse(std::string_view lo, std::string_view hi) {
    return parse_item(lo, min, minex, min_inf) && parse_item(hi, max, maxex, max_inf);
  }
  // sdscmplex: "-" below every string, "+" above, else bytes compared unsigned.
  static int cmp(int inf_a, const std::string& a, int inf_b, const std::string& b) {
    if (inf_a != 0 || inf_b != 0) return inf_a == inf_b ? 0 : inf_a < inf_b ? -1 : 1;
    return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
  }
  bool gte_min(const std::string& m) const {
    const int c = cmp(0, m, min_inf, min);
    return minex ? c > 0 : c >= 0;
  }
  bool lte_max(const std::string& m) const {
    const int c = cmp(0, m, max_inf, max);
    return maxex ? c < 0 : c <= 0;
  }
  // zslIsInLexRange: whether anything of `z` can be in it (by its first and last member).
  bool may_hold(const std::set<Member>& z) const {
    const int c = cmp(min_inf, min, max_inf, max);
    if (c > 0 || (c == 0 && (minex || maxex))) return false;
    return !z.empty() && gte_min(z.rbegin()->second) && lte_max(z.begin()->second);
  }
};

// The members a lexicographic range takes, in Redis's walk over the set (score order):
// forward from the first member at or past min (if it is at or below max), `skip` members
// passed over unchecked, then each while at or below max; backward alike from the last
// member at or below max. (Members of one score, as lex ranges assume, give exactly the
// range; mixed scores give what redis-server gives.)
template <class It, class F>
void walk_lex_from(It it, It end, bool (LexRange::*first)(const std::string&) const,
                   bool (LexRange::*keep)(const std::string&) const, const LexRange& range,
                   int64_t skip, F&& take) {
  it = std::find_if(it, end, [&](const Member& m) { return (range.*first)(m.second); });
  if (it == end || !(range.*keep)(it->second)) return;
  for (; it != end && skip > 0; --skip) ++it;
  for (; it != end && (range.*keep)(it->second); ++it)
    if (!take(*it)) return;
}

template <class F>
void walk_lex(const std::set<Member>& z, const LexRange& range, bool rev, int64_t skip, F&& take) {
  if (!range.may_hold(z)) return;
  if (!rev) {
    walk_lex_from(z.begin(), z.end(), &LexRange::gte_min, &LexRange::lte_max, range, skip, take);
  } else {
    walk_lex_from(z.rbegin(), z.rend(), &LexRange::lte_max, &LexRange::gte_min, range, skip, take);
  }
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES], and
// ZRANGEBYSCORE key min max, ZREVRANGE key start stop, ZREVRANGEBYSCORE key max min (whose
// names fix the range's kind and direction), and ZRANGESTORE dst src min max [...] without
// WITHSCORES (t_zset.c's zrangeGenericCommand): the range is read before the key is.
struct RangeQuery {
  bool withscores = false, by_score = false, by_lex = false, rev = false;
  int64_t offset = 0, limit = -1, start = 0, end = 0;
  ScoreRange range;
  LexRange lex;

  // The range at words `from` and `from + 1`, its options after them. False, with the error
  // replied, for a bad one.
  bool parse(const std::vector<std::string_view>& a, size_t from, DataCmd c, bool store,
             DataReply& r) {
    by_score = c == DataCmd::kZRangeByScore || c == DataCmd::kZRevRangeByScore;
    // (the name says rank, score or lex, and direction)
    const bool fixed = c != DataCmd::kZRange && c != DataCmd::kZRangeStore;
    by_lex = c == DataCmd::kZRangeByLex || c == DataCmd::kZRevRangeByLex;
    rev = c == DataCmd::kZRevRange || c == DataCmd::kZRevRangeByScore ||
          c == DataCmd::kZRevRangeByLex;
    for (size_t j = from + 2; j < a.size(); ++j) {
      const size_t left = a.size() - j - 1;
      if (!store && iequals(a[j], "withscores")) {
        withscores = true;
      } else if (iequals(a[j], "limit") && left >= 2) {
        if (!parse_long(a[j + 1], offset) || !parse_long(a[j + 2], limit)) {
          r.error(err::kNotInteger);
          return false;
        }
        j += 2;
      } else if (!fixed && !rev && iequals(a[j], "rev")) {
        rev = true;
      } else if (!fixed && !by_score && !by_lex && iequals(a[j], "bylex")) {
        by_lex = true;
      } else if (!fixed && !by_score && !by_lex && iequals(a[j], "byscore")) {
        by_score = true;
      } else {
        r.error(err::kSyntax);
        return false;
      }
    }
    if (limit != -1 && !by_score && !by_lex) {
      r.error(err::kZRangeLimit);
      return false;
    }
    if (withscores && by_lex) {
      r.error(err::kLexWithScores);
      return false;
    }
    std::string_view lo = a[from], hi = a[from + 1];
    if (rev && (by_score || by_lex)) std::swap(lo, hi);
    if (by_score) {
      if (!parse_range(lo, hi, range)) {
        r.error(err::kMinMaxNotFloat);
        return false;
      }
    } else if (by_lex) {
      if (!lex.parse(lo, hi)) {
        r.error(err::kLexRange);
        return false;
      }
    } else if (!parse_long(lo, start) || !parse_long(hi, end)) {
      r.error(err::kNotInteger);
      return false;
    }
    return true;
  }

  // The members the range takes, in the order it lists them.
  void select(const ZSetValue& z, std::vector<const Member*>& out) const {
    if (by_lex) {
      // (Redis: past the end, or a negative offset, takes nothing; a negative count, the rest.)
      if (offset >= 0 && !(offset > 0 && offset >= static_cast<int64_t>(z.size()))) {
        walk_lex(z.by_score, lex, rev, offset, [&](const Member& m) {
          if (limit >= 0 && static_cast<int64_t>(out.size()) >= limit) return false;
          out.push_back(&m);
          return true;
        });
      }
    } else if (!by_score) {
      const int64_t len = static_cast<int64_t>(z.size());
      int64_t first = start, last = end;
      if (!clamp_ranks(first, last, len)) return;
      if (!rev) {
        auto it = std::next(z.by_score.begin(), first);
        for (int64_t k = first; k <= last; ++k, ++it) out.push_back(&*it);
      } else {
        auto it = std::next(z.by_score.rbegin(), first);
        for (int64_t k = first; k <= last; ++k, ++it) out.push_back(&*it);
      }
    } else if (!(offset > 0 && offset >= static_cast<int64_t>(z.size()))) {
      std::vector<const Member*> in;
      if (!rev) {
        for (const Member& m : z.by_score)
          if (range.contains(m.first)) in.push_back(&m);
      } else {
        for (auto it = z.by_score.rbegin(); it != z.by_score.rend(); ++it)
          if (range.contains(it->first)) in.push_back(&*it);
      }
      // (Redis: a negative offset skips everything; a negative count takes all the rest.)
      if (offset >= 0) {
        for (size_t k = static_cast<size_t>(offset); k < in.size(); ++k) {
          if (limit >= 0 && static_cast<int64_t>(out.size()) >= limit) break;
          out.push_back(in[k]);
        }
      }
    }
  }
};

}  // namespace

void Shard::data_zset(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;

  // The set, for commands that only read it or take from it: null if absent.
  auto existing = [&](Entry*& e) -> ZSetValue* {
    e = typed(op, Kind::kZSet, false, now_ns);
    return e ? e->state<ZSetValue*>() : nullptr;
  };
  // After a removal: an empty set goes, as in Redis.
  auto changed = [&](Entry* e, ZSetValue& z) {
    if (z.size() == 0) {
      forget(op.key, op.hash);
      mark_gone(op.key);
    } else {
      mark(e, op.key);
    }
  };
  // A member and, with scores, its score: RESP2 flat, RESP3 a pair per member.
  auto emit = [&](const Member& m, bool withscores) {
    if (withscores && op.resp3) r.array(2);
    r.bulk(m.second);
    if (withscores) r.dbl(m.first);
  };
  Entry* e = nullptr;

  switch (c) {
    case DataCmd::kZAdd:
    case DataCmd::kZIncrBy: {  // (ZINCRBY key increment member: ZADD key INCR ...)
      bool nx = false, xx = false, gt = false, lt = false, ch = false;
      bool incr = c == DataCmd::kZIncrBy;
      size_t i = 2;
      for (; i < a.size() && c == DataCmd::kZAdd; ++i) {
        if (iequals(a[i], "nx")) {
          nx = true;
        } else if (iequals(a[i], "xx")) {
          xx = true;
        } else if (iequals(a[i], "ch")) {
          ch = true;
        } else if (iequals(a[i], "incr")) {
          incr = true;
        } else if (iequals(a[i], "gt")) {
          gt = true;
        } else if (iequals(a[i], "lt")) {
          lt = true;
        } else {
          break;
        }
      }
      const size_t elements = a.size() - i;
      if (elements % 2 || elements == 0) return r.error(err::kSyntax);
      if (nx && xx) return r.error(err::kZAddXxNx);
      if ((gt && nx) || (lt && nx) || (gt && lt)) return r.error(err::kZAddGtLtNx);
      if (incr && elements > 2) return r.error(err::kZAddIncrPair);
      std::vector<double> scores(elements / 2);
      for (size_t j = 0; j < scores.size(); ++j) {
        if (!parse_score(a[i + 2 * j], scores[j])) return r.error(err::kNotFloat);
      }
      e = typed(op, Kind::kZSet, !xx, now_ns);  // (no key and XX: nothing to do)
      if (op.status != OpStatus::kOk) return;
      int64_t added = 0, updated = 0, processed = 0;
      double last = 0;
      if (e) {
        ZSetValue& z = *e->state<ZSetValue*>();
        size_t fresh = 0;
        for (size_t j = 0; j < scores.size(); ++j) fresh += z.score(a[i + 2 * j + 1]) ? 0 : 1;
        if (!xx && z.size() + fresh > kMaxZSetMembers) {
          if (z.size() == 0) table_.erase(op.key, op.hash);
          return r.error(err::collection_full("a sorted set", kMaxZSetMembers, "members"));
        }
        for (size_t j = 0; j < scores.size(); ++j) {
          const std::string_view m = a[i + 2 * j + 1];
          double score = scores[j];
          if (const double* cur = z.score(m)) {
            if (nx) continue;
            const double before = *cur;
            if (incr) {
              score += before;
              if (std::isnan(score)) {
                if (z.size() == 0) table_.erase(op.key, op.hash);
                return r.error(err::kZScoreNan);
              }
            }
            if ((lt && score >= before) || (gt && score <= before)) continue;
            ++processed;
            last = score;
            if (score != before) {
              z.set(m, score);
              ++updated;
            }
          } else {
            if (xx) continue;
            z.set(m, score);
            ++added;
            ++processed;
            last = score;
          }
        }
        if (z.size() == 0) {
          table_.erase(op.key, op.hash);  // (nothing was added to a set made for it)
        } else if (added || updated) {
          mark(e, op.key);
        }
      }
      if (incr) return processed ? r.dbl(last) : r.null();
      return r.integer(ch ? added + updated : added);
    }

    case DataCmd::kZRem: {
      ZSetValue* z = existing(e);
      if (!z) return op.status == OpStatus::kOk ? r.integer(0) : void();
      int64_t n = 0;
      for (size_t j = 2; j < a.size(); ++j) n += z->erase(a[j]) ? 1 : 0;
      if (n) changed(e, *z);
      return r.integer(n);
    }

    case DataCmd::kZCard: {
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      return r.integer(z ? static_cast<int64_t>(z->size()) : 0);
    }

    case DataCmd::kZScore: {
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      const double* s = z ? z->score(a[2]) : nullptr;
      return s ? r.dbl(*s) : r.null();
    }

    case DataCmd::kZMScore: {
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      r.array(static_cast<int64_t>(a.size() - 2));
      for (size_t j = 2; j < a.size(); ++j) {
        const double* s = z ? z->score(a[j]) : nullptr;
        if (s) {
          r.dbl(*s);
        } else {
          r.null();
        }
      }
      return;
    }

    case DataCmd::kZRank:
    case DataCmd::kZRevRank: {
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      const double* s = z ? z->score(a[2]) : nullptr;
      if (!s) return r.null();
      const auto rank =
          std::distance(z->by_score.begin(), z->by_score.find({*s, std::string(a[2])}));
      const int64_t n = static_cast<int64_t>(z->size());
      return r.integer(c == DataCmd::kZRank ? rank : n - 1 - rank);
    }

    case DataCmd::kZCount:
    case DataCmd::kZRemRangeByScore: {
      ScoreRange range;
      if (!parse_range(a[2], a[3], range)) return r.error(err::kMinMaxNotFloat);
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!z) return r.integer(0);
      std::vector<Member> hits;
      for (auto it = z->by_score.lower_bound({range.min, std::string()});
           it != z->by_score.end() && range.lte_max(it->first); ++it) {
        if (range.contains(it->first)) hits.push_back(*it);
      }
      if (c == DataCmd::kZRemRangeByScore) {
        for (const Member& m : hits) z->erase(m.second);
        if (!hits.empty()) changed(e, *z);
      }
      return r.integer(static_cast<int64_t>(hits.size()));
    }

    case DataCmd::kZLexCount:
    case DataCmd::kZRemRangeByLex: {
      LexRange range;
      if (!range.parse(a[2], a[3])) return r.error(err::kLexRange);
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!z) return r.integer(0);
      std::vector<std::string> hits;
      walk_lex(z->by_score, range, false, 0, [&](const Member& m) {
        hits.push_back(m.second);
        return true;
      });
      if (c == DataCmd::kZRemRangeByLex) {
        for (const auto& m : hits) z->erase(m);
        if (!hits.empty()) changed(e, *z);
      }
      return r.integer(static_cast<int64_t>(hits.size()));
    }

    case DataCmd::kZRemRangeByRank: {
      int64_t start, end;
      if (!parse_long(a[2], start) || !parse_long(a[3], end)) return r.error(err::kNotInteger);
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!z || !clamp_ranks(start, end, static_cast<int64_t>(z->size()))) return r.integer(0);
      std::vector<std::string> gone;
      auto it = std::next(z->by_score.begin(), start);
      for (int64_t k = start; k <= end; ++k, ++it) gone.push_back(it->second);
      for (const auto& m : gone) z->erase(m);
      changed(e, *z);
      return r.integer(static_cast<int64_t>(gone.size()));
    }

    case DataCmd::kZPopMin:
    case DataCmd::kZPopMax: {
      if (a.size() > 3) return r.error(err::kSyntax);
      int64_t count = -1;
      if (a.size() == 3) {
        // (Redis's getPositiveLong: one text for not a number and for negative)
        if (!parse_long(a[2], count) || count < 0) return r.error(err::kNotPositive);
      }
      const bool nested = op.resp3 && count != -1;
      ZSetValue* z = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!z || count == 0) return r.array(0);
      if (count == -1) count = 1;
      const int64_t n = std::min<int64_t>(count, static_cast<int64_t>(z->size()));
      r.array(nested ? n : 2 * n);
      for (int64_t k = 0; k < n; ++k) {
        const Member m = c == DataCmd::kZPopMin ? *z->by_score.begin() : *z->by_score.rbegin();
        if (nested) r.array(2);
        r.bulk(m.second);
        r.dbl(m.first);
        z->erase(m.second);
      }
      return changed(e, *z);
    }

    default:  // ZRANGE, ZRANGEBYSCORE, ZREVRANGE, ZREVRANGEBYSCORE
      break;
  }

  RangeQuery q;
  if (!q.parse(a, 2, c, false, r)) return;
  ZSetValue* z = existing(e);
  if (op.status != OpStatus::kOk) return;
  if (!z) return r.array(0);
  std::vector<const Member*> out;
  q.select(*z, out);
  const bool flat_scores = q.withscores && !op.resp3;
  r.array(static_cast<int64_t>(out.size()) * (flat_scores ? 2 : 1));
  for (const Member* m : out) emit(*m, q.withscores);
}

// ZSCAN key cursor [MATCH pattern] [COUNT n]: each member and its score (as text, in RESP3
// too, as Redis's scan replies have it). A small sorted set whole, under cursor 0, in score
// order (as Redis answers for a listpack); a larger one about COUNT members a call, in the
// order of their hashes (scan_args.hpp).
void Shard::zset_scan(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  Entry* e = nullptr;
  uint64_t cursor = 0;
  ScanArgs args;
  if (!scan_key(op, Kind::kZSet, now_ns, e, cursor, args)) return;
  const ZSetValue& z = *e->state<ZSetValue*>();
  const ScanFilter matches(args.pattern);
  std::vector<std::pair<std::string_view, double>> hits;
  uint64_t next = 0;
  if (z.size() <= kScanWhole) {
    for (const Member& m : z.by_score)
      if (matches(m.second)) hits.emplace_back(m.second, m.first);
  } else {
    auto each = [&](auto&& visit) {
      for (const auto& [m, score] : z.scores) visit(std::string_view(m));
    };
    next = scan_by_hash(each, cursor, args.count, [&](std::string_view m) {
      if (matches(m)) hits.emplace_back(m, *z.score(m));
    });
  }
  r.array(2);
  r.bulk(std::to_string(next));
  r.array(2 * static_cast<int64_t>(hits.size()));
  DataReply score;
  for (const auto& [m, s] : hits) {
    r.bulk(m);
    score.clear();
    score.dbl(s);
    r.bulk(score.items[0].s);
  }
}

}  // namespace fg

namespace fg {

namespace {

// The inputs of ZUNION and its kin: a sorted set, or a set (each member scored 1), with its
// weight.
struct ZSource {
  const ZSetValue* z = nullptr;
  const SetValue* s = nullptr;
  double weight = 1;
  size_t size() const { return z ? z->size() : s ? s->size() : 0; }
  template <class F>
  void each(F&& f) const {
    if (z) {
      for (const auto& [score, m] : z->by_score) f(m, score);
    } else if (s) {
      for (const std::string* m : s->members) f(*m, 1.0);
    }
  }
  const double* find(const std::string& m, double& one) const {
    if (z) return z->score(m);
    if (s && s->contains(m)) return &one;
    return nullptr;
  }
};

enum class Aggregate : uint8_t { kSum, kMin, kMax };

// zunionInterAggregate: a sum that is not a number (inf - inf) is 0.
void aggregate(double& into, double v, Aggregate how) {
  switch (how) {
    case Aggregate::kSum:
      into += v;
      if (std::isnan(into)) into = 0;
      break;
    case Aggregate::kMin:
      into = std::min(into, v);
      break;
    case Aggregate::kMax:
      into = std::max(into, v);
      break;
  }
}

}  // namespace

// ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE destination numkeys key ... , ZUNION/ZINTER/ZDIFF numkeys
// key ... [WITHSCORES], ZINTERCARD numkeys key ... [LIMIT n] (t_zset.c's
// zunionInterDiffGenericCommand): the keys' types are checked before the options (WEIGHTS,
// AGGREGATE SUM|MIN|MAX); a set counts as a sorted set whose members all score 1.
void Shard::zset_algebra(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  const bool store =
      c == DataCmd::kZUnionStore || c == DataCmd::kZInterStore || c == DataCmd::kZDiffStore;
  const bool card = c == DataCmd::kZInterCard;
  const bool diff = c == DataCmd::kZDiff || c == DataCmd::kZDiffStore;
  const bool inter = c == DataCmd::kZInter || c == DataCmd::kZInterStore || card;
  const size_t at = store ? 2 : 1;  // where numkeys is
  int64_t setnum;
  if (!parse_long(a[at], setnum)) return r.error(err::kNotInteger);
  if (setnum < 1) return r.error(err::at_least_one_key(data_cmd_info(c).name));
  if (static_cast<uint64_t>(setnum) > a.size() - (at + 1)) return r.error(err::kSyntax);
  std::vector<ZSource> src(static_cast<size_t>(setnum));
  size_t j = at + 1;
  for (ZSource& s : src) {
    const std::string_view key = a[j++];
    Entry* e = holder_of(key)->lookup(key, KeyTable::hash(key), now_ns);
    if (!e) continue;
    if (e->kind == Kind::kZSet) {
      s.z = e->state<ZSetValue*>();
    } else if (e->kind == Kind::kSet) {
      s.s = e->state<SetValue*>();
    } else {
      op.status = OpStatus::kWrongType;
      return;
    }
  }
  Aggregate how = Aggregate::kSum;
  bool withscores = false;
  int64_t limit = 0;  // ZINTERCARD: stop counting there (0: no limit)
  while (j < a.size()) {
    const size_t remaining = a.size() - j;
    if (!diff && !card && remaining >= src.size() + 1 && iequals(a[j], "weights")) {
      ++j;
      for (ZSource& s : src) {
        if (!parse_score(a[j++], s.weight)) return r.error(err::kWeightNotFloat);
      }
    } else if (!diff && !card && remaining >= 2 && iequals(a[j], "aggregate")) {
      const std::string_view w = a[j + 1];
      if (iequals(w, "sum")) {
        how = Aggregate::kSum;
      } else if (iequals(w, "min")) {
        how = Aggregate::kMin;
      } else if (iequals(w, "max")) {
        how = Aggregate::kMax;
      } else {
        return r.error(err::kSyntax);
      }
      j += 2;
    } else if (!store && !card && iequals(a[j], "withscores")) {
      withscores = true;
      ++j;
    } else if (card && remaining >= 2 && iequals(a[j], "limit")) {
      if (!parse_long(a[j + 1], limit) || limit < 0) return r.error(err::kLimitNegative);
      j += 2;
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (!diff) {  // (smallest first, as Redis: an intersection walks the smallest)
    std::stable_sort(src.begin(), src.end(),
                     [](const ZSource& x, const ZSource& y) { return x.size() < y.size(); });
  }
  ZSetValue out;
  int64_t count = 0;
  double one = 1;
  if (inter) {
    src[0].each([&](const std::string& m, double s) {
      if (card && limit > 0 && count >= limit) return;
      double score = src[0].weight * s;
      if (std::isnan(score)) score = 0;
      for (size_t i = 1; i < src.size(); ++i) {
        const double* v = src[i].find(m, one);
        if (!v) return;
        aggregate(score, *v * src[i].weight, how);
      }
      ++count;
      if (!card) out.set(m, score);
    });
    if (card) return r.integer(count);
  } else if (diff) {
    src[0].each([&](const std::string& m, double s) {
      for (size_t i = 1; i < src.size(); ++i)
        if (src[i].find(m, one)) return;
      out.set(m, s);
    });
  } else {
    for (const ZSource& in : src) {
      in.each([&](const std::string& m, double s) {
        double score = in.weight * s;
        if (std::isnan(score)) score = 0;
        auto it = out.scores.find(m);
        if (it == out.scores.end()) {
          if (out.size() < kMaxZSetMembers + 1) out.set(m, score);
        } else {
          double next = it->second;
          aggregate(next, score, how);
          out.set(m, next);
        }
      });
    }
  }
  if (out.size() > kMaxZSetMembers) {
    return r.error(err::collection_full("a sorted set", kMaxZSetMembers, "members"));
  }
  if (!store) {
    const bool flat = withscores && !op.resp3;
    r.array(static_cast<int64_t>(out.size()) * (flat ? 2 : 1));
    for (const Member& m : out.by_score) {
      if (withscores && op.resp3) r.array(2);
      r.bulk(m.second);
      if (withscores) r.dbl(m.first);
    }
    return;
  }
  store_zset(op, a[1], std::move(out), now_ns);
}

// Puts `z` at `dst` in place of whatever it held (its TTL too), or deletes `dst` when `z` is
// empty, and answers how many members it holds.
void Shard::store_zset(ShardOp& op, std::string_view dst, ZSetValue&& z, int64_t now_ns) {
  Entry* e = fresh_destination(op, dst, Kind::kZSet, z.size() == 0, now_ns);
  if (!e) return;
  *e->state<ZSetValue*>() = std::move(z);
  holder_of(dst)->mark(e, dst);
  op.reply->integer(static_cast<int64_t>(e->state<ZSetValue*>()->size()));
}

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
void Shard::zset_range_store(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  RangeQuery q;
  if (!q.parse(a, 3, op.data, true, r)) return;
  const std::string_view src = a[2];
  Entry* e = holder_of(src)->lookup(src, KeyTable::hash(src), now_ns);
  if (e && e->kind != Kind::kZSet) {
    op.status = OpStatus::kWrongType;
    return;
  }
  ZSetValue out;
  if (e) {
    std::vector<const Member*> picked;
    q.select(*e->state<ZSetValue*>(), picked);
    for (const Member* m : picked) out.set(m->second, m->first);
  }
  store_zset(op, a[1], std::move(out), now_ns);
}

// Sorted sets' row of the kinds table (value_kinds.hpp).
namespace {
ZSetValue& zset_of(const Entry& e) { return *e.state<ZSetValue*>(); }
void zset_make(Entry& e) { e.state<ZSetValue*>() = new ZSetValue(); }
void zset_free(Entry& e) { delete e.state<ZSetValue*>(); }
bool zset_idle(const Entry& e, int64_t) { return zset_of(e).size() == 0; }
uint64_t zset_bytes(const Entry& e) { return sizeof(ZSetValue) + zset_of(e).bytes; }
int64_t zset_usage(Entry& e) {  // (a member's score and its place in both indexes)
  int64_t n = 0;
  for (const auto& [m, s] : zset_of(e).scores) n += 96 + 2 * static_cast<int64_t>(m.size());
  return n;
}
// listpack while within zset-max-listpack-entries and -value, else skiplist (Redis 7.0's).
const char* zset_encoding(Entry& e) {
  const EncodingThresholds& t = encoding_thresholds();
  const ZSetValue& z = zset_of(e);
  bool small = static_cast<int64_t>(z.size()) <= t.zset_entries;
  for (const auto& [m, s] : z.scores)
    small = small && static_cast<int64_t>(m.size()) <= t.zset_value;
  return small ? "listpack" : "skiplist";
}
void zset_snapshot(Entry& e, EntrySnapshot& s) {
  for (const auto& [score, m] : zset_of(e).by_score) s.zset.emplace_back(m, score);
}
void zset_restore(Entry& e, const EntrySnapshot& s) {
  ZSetValue& z = zset_of(e);
  z = ZSetValue();
  for (const auto& [m, score] : s.zset) z.set(m, score);
}
// The union of the members; a member in both: the larger score.
bool zset_merge(EntrySnapshot& into, const EntrySnapshot& from) {
  std::map<std::string, double> by_member;
  for (const auto& [m, s] : into.zset) by_member.emplace(m, s);
  bool changed = false;
  for (const auto& [m, s] : from.zset) {
    auto [it, fresh] = by_member.emplace(m, s);
    if (fresh || s > it->second) {
      it->second = s;
      changed = true;
    }
  }
  if (!changed) return false;
  into.zset.assign(by_member.begin(), by_member.end());
  std::stable_sort(into.zset.begin(), into.zset.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  return true;
}
}  // namespace

const KindRow kZSetKind = {Kind::kZSet,
                           sizeof(ZSetValue*),
                           0,
                           false,
                           &zset_make,
                           &zset_free,
                           &zset_idle,
                           nullptr,
                           &zset_bytes,
                           &zset_usage,
                           &zset_encoding,
                           &zset_snapshot,
                           &zset_restore,
                           &zset_merge,
                           nullptr,
                           nullptr,
                           nullptr};

}  // namespace fg
