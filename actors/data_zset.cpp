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
#include <set>
#include <string>
#include <vector>

#include "errors.hpp"
#include "shard.hpp"
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

  // ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES], and
  // ZRANGEBYSCORE key min max, ZREVRANGE key start stop, ZREVRANGEBYSCORE key max min, whose
  // names fix the range's kind and direction (t_zset.c's zrangeGenericCommand).
  const bool by_score_cmd = c == DataCmd::kZRangeByScore || c == DataCmd::kZRevRangeByScore;
  const bool fixed = c != DataCmd::kZRange;  // (the name says rank, score or lex, and direction)
  bool withscores = false, by_score = by_score_cmd;
  bool by_lex = c == DataCmd::kZRangeByLex || c == DataCmd::kZRevRangeByLex;
  bool rev =
      c == DataCmd::kZRevRange || c == DataCmd::kZRevRangeByScore || c == DataCmd::kZRevRangeByLex;
  int64_t offset = 0, limit = -1;
  for (size_t j = 4; j < a.size(); ++j) {
    const size_t left = a.size() - j - 1;
    if (iequals(a[j], "withscores")) {
      withscores = true;
    } else if (iequals(a[j], "limit") && left >= 2) {
      if (!parse_long(a[j + 1], offset) || !parse_long(a[j + 2], limit)) {
        return r.error(err::kNotInteger);
      }
      j += 2;
    } else if (!fixed && !rev && iequals(a[j], "rev")) {
      rev = true;
    } else if (!fixed && !by_score && !by_lex && iequals(a[j], "bylex")) {
      by_lex = true;
    } else if (!fixed && !by_score && !by_lex && iequals(a[j], "byscore")) {
      by_score = true;
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (limit != -1 && !by_score && !by_lex) return r.error(err::kZRangeLimit);
  if (withscores && by_lex) return r.error(err::kLexWithScores);
  std::string_view lo = a[2], hi = a[3];
  if (rev && (by_score || by_lex)) std::swap(lo, hi);
  int64_t start = 0, end = 0;
  ScoreRange range;
  LexRange lex;
  if (by_score) {
    if (!parse_range(lo, hi, range)) return r.error(err::kMinMaxNotFloat);
  } else if (by_lex) {
    if (!lex.parse(lo, hi)) return r.error(err::kLexRange);
  } else if (!parse_long(lo, start) || !parse_long(hi, end)) {
    return r.error(err::kNotInteger);
  }
  ZSetValue* z = existing(e);
  if (op.status != OpStatus::kOk) return;
  if (!z) return r.array(0);
  std::vector<const Member*> out;
  if (by_lex) {
    // (Redis: past the end, or a negative offset, takes nothing; a negative count, the rest.)
    if (offset >= 0 && !(offset > 0 && offset >= static_cast<int64_t>(z->size()))) {
      walk_lex(z->by_score, lex, rev, offset, [&](const Member& m) {
        if (limit >= 0 && static_cast<int64_t>(out.size()) >= limit) return false;
        out.push_back(&m);
        return true;
      });
    }
  } else if (!by_score) {
    const int64_t len = static_cast<int64_t>(z->size());
    if (!clamp_ranks(start, end, len)) return r.array(0);
    if (!rev) {
      auto it = std::next(z->by_score.begin(), start);
      for (int64_t k = start; k <= end; ++k, ++it) out.push_back(&*it);
    } else {
      auto it = std::next(z->by_score.rbegin(), start);
      for (int64_t k = start; k <= end; ++k, ++it) out.push_back(&*it);
    }
  } else if (!(offset > 0 && offset >= static_cast<int64_t>(z->size()))) {
    std::vector<const Member*> in;
    if (!rev) {
      for (const Member& m : z->by_score)
        if (range.contains(m.first)) in.push_back(&m);
    } else {
      for (auto it = z->by_score.rbegin(); it != z->by_score.rend(); ++it)
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
  const bool flat_scores = withscores && !op.resp3;
  r.array(static_cast<int64_t>(out.size()) * (flat_scores ? 2 : 1));
  for (const Member* m : out) emit(*m, withscores);
}

}  // namespace fg
