// CL.THROTTLE and the FG.* limiter family: RESP arguments decoded into one Request for the
// request core. Only syntax is checked here; what a request may ask is checked by the core,
// for every door alike.
#include <algorithm>
#include <cmath>
#include <string>

#include "command_table.hpp"
#include "errors.hpp"
#include "gcra.hpp"
#include "handlers.hpp"
#include "key_table.hpp"
#include "words.hpp"

namespace fg {

namespace {

Request keyed_request(Verb verb, std::string_view key) {
  Request r;
  r.verb = verb;
  r.key = key;
  return r;
}

// The limit at a[i] for key a[1]: an inline "<kind> <params...>", a policy name (unless a[i]
// is one of `keywords`, which start the options), or nothing — then the key's override or
// most specific key pattern decides. Advances i past what it used.
Result<LimitSpec> limit_at(CommandContext& s, Args& a, size_t& i,
                           std::initializer_list<std::string_view> keywords) {
  if (i < a.size() && kind_from_name(a[i]) != Kind::kNone) return parse_limit_words(a, i);
  std::string_view named;
  if (i < a.size()) {
    named = a[i];
    for (auto k : keywords)
      if (iequals(named, k)) named = {};
    if (!named.empty()) ++i;
  }
  return s.policies().resolve(a[1], named);
}

// [COST n] after a limit (and, for FG.TAKE, [WAIT ms]: `wait` not null).
bool parse_cost(CommandContext& s, Args& a, size_t i, int64_t& cost, int64_t* wait = nullptr) {
  cost = 1;
  for (; i < a.size(); ++i) {
    if (iequals(a[i], "cost") && i + 1 < a.size()) {
      if (!parse_int(a[i + 1], cost)) {
        s.local().error(err::kNotInteger);
        return false;
      }
      ++i;
    } else if (wait && iequals(a[i], "wait") && i + 1 < a.size()) {
      if (!parse_int(a[i + 1], *wait) || *wait < 0 || *wait > kMaxWaitMs) {
        s.local().error(err::kWaitRange);
        return false;
      }
      ++i;
    } else {
      s.local().error(err::kSyntax);
      return false;
    }
  }
  return true;
}

void take_or_peek(CommandContext& s, Args& a, Verb verb) {
  size_t i = 2;
  Result<LimitSpec> limit = limit_at(s, a, i, {"cost", "wait"});
  if (!limit.ok()) return s.local().error(limit.error());
  Request r = keyed_request(verb, a[1]);
  r.spec = limit.value();
  if (!parse_cost(s, a, i, r.cost, verb == Verb::kTake ? &r.wait_ms : nullptr)) return;
  if (r.wait_ms > 0) {
    if (r.spec.kind != Kind::kTokenBucket && r.spec.kind != Kind::kGcra) {
      return s.local().error(err::kWaitKind);
    }
    if (!s.can_wait()) r.wait_ms = 0;  // (a transaction or a script: decided at once)
  }
  s.request(r, ReplyStyle::kDecision);
}

bool parse_ms(CommandContext& s, std::string_view v, int64_t& ms) {
  if (parse_int(v, ms)) return true;
  s.local().error(err::kNotInteger);
  return false;
}

}  // namespace

// CL.THROTTLE (or RL.THROTTLE) key max_burst count period [quantity] — redis-cell's
// arguments, in seconds.
void cmd_cl_throttle(CommandContext& s, Args& a) {
  int64_t burst, count, period, qty = 1;
  if (!parse_int(a[2], burst) || !parse_int(a[3], count) || !parse_int(a[4], period) ||
      (a.size() == 6 && !parse_int(a[5], qty))) {
    return s.local().error(err::kNotInteger);
  }
  if (a.size() > 6) {  // (RL.THROTTLE, the same command by another name, says its own)
    return s.local().error(
        err::wrong_arity(iequals(a[0], "rl.throttle") ? "rl.throttle" : "cl.throttle"));
  }
  if (burst < 0 || count <= 0 || period <= 0 || qty < 0) return s.local().error(err::kNotPositive);
  if (period > kMaxPeriodNs / kNsPerSec) return s.local().error(err::kNotInteger);
  // Its own fixed syntax, in seconds: the spec is built here and checked as every limit is.
  Request r = keyed_request(Verb::kTake, a[1]);
  r.spec = LimitSpec::gcra(burst, count, period * kNsPerSec);
  if (validate(r.spec)) return s.local().error(err::kNotInteger);  // as redis-cell: out of range
  r.cost = qty;
  s.request(r, ReplyStyle::kThrottle);
}

// GCRA key max_burst tokens_per_period period [TOKENS count | NUM_REQUESTS count] — Redis's
// own rate-limit command (redis/redis#14826, gcra.c): its checks and texts in its order, the
// period in seconds as a float. The same state as CL.THROTTLE on the key (a GCRA limiter),
// the same reply, its seconds rounded up.
void cmd_gcra(CommandContext& s, Args& a) {
  if (a.size() > 7) return s.local().error(err::wrong_arity("gcra"));
  int64_t burst, per_period, tokens = 1;
  if (!parse_int(a[2], burst)) return s.local().error(err::kNotInteger);
  if (burst < 0) return s.local().error(err::kNotPositive);
  if (!parse_int(a[3], per_period)) return s.local().error(err::kNotInteger);
  if (per_period < 1) return s.local().error(err::out_of_range(1, INT64_MAX));
  long double period;
  if (!parse_long_double(a[4], period) || std::isinf(period))
    return s.local().error(err::kNotFloat);
  if (period <= 0 || period >= 1e12L) return s.local().error(err::kGcraPeriod);
  if (a.size() >= 6) {
    if (!iequals(a[5], "tokens") && !iequals(a[5], "num_requests")) {
      return s.local().error(err::kSyntax);
    }
    if (a.size() == 6) return s.local().error(err::kGcraMissingTokens);
    if (!parse_int(a[6], tokens)) return s.local().error(err::kNotInteger);
    if (tokens < 1) return s.local().error(err::out_of_range(1, INT64_MAX));
  }
  Request r = keyed_request(Verb::kTake, a[1]);
  const auto period_ns = static_cast<int64_t>(std::llround(std::min<long double>(
      period * static_cast<long double>(kNsPerSec), static_cast<long double>(kMaxPeriodNs) + 1)));
  r.spec = LimitSpec::gcra(burst, per_period, std::max<int64_t>(1, period_ns));
  // (past what a limit here may hold — a period of ten years, 2^40 tokens — said as such)
  if (const char* why = validate(r.spec)) return s.local().error(why);
  if (tokens > kMaxCount) return s.local().error(err::kGcraRange);
  r.cost = tokens;
  s.request(r, ReplyStyle::kGcra);
}

void cmd_fg_take(CommandContext& s, Args& a) { take_or_peek(s, a, Verb::kTake); }

// FG.TAKEALL [COST n] key limit [key limit ...]: each limit a policy name or an inline
// "<kind> <params...>"; charged only if every one allows (take_all.hpp).
void cmd_fg_takeall(CommandContext& s, Args& a) {
  size_t i = 1;
  int64_t cost = 1;
  if (i + 1 < a.size() && iequals(a[i], "cost")) {
    if (!parse_int(a[i + 1], cost) || cost < 0 || cost > kMaxCount) {
      return s.local().error(err::kNotInteger);
    }
    i += 2;
  }
  std::vector<TakeAllItem> items;
  while (i < a.size()) {
    if (items.size() == kMaxTakeAll) return s.local().error(err::kTakeAllCount);
    if (i + 1 >= a.size()) return s.local().error(err::kSyntax);
    const std::string_view key = a[i++];
    if (key.size() > kMaxKeyLen) return s.local().error(err::kKeyTooLong);
    Result<LimitSpec> limit = kind_from_name(a[i]) != Kind::kNone
                                  ? parse_limit_words(a, i)
                                  : s.policies().resolve(key, a[i++]);
    if (!limit.ok()) return s.local().error(limit.error());
    if (limit->kind == Kind::kConcurrency) return s.local().error(err::kTakeAllConcurrency);
    if (!s.acl().user()->key_allowed(key, true, true)) return s.local().error(err::kNoPermKey);
    items.push_back(TakeAllItem{std::string(key), limit.value()});
  }
  if (items.empty()) return s.local().error(err::wrong_arity("fg.takeall"));
  s.take_all(std::move(items), cost);
}
void cmd_fg_peek(CommandContext& s, Args& a) { take_or_peek(s, a, Verb::kPeek); }

// FG.ADJUST key [policy|kind params...] delta: the limit as FG.TAKE names it, the signed
// delta last.
void cmd_fg_adjust(CommandContext& s, Args& a) {
  int64_t delta;
  if (!parse_int(a.back(), delta)) return s.local().error(err::kNotInteger);
  std::vector<std::string_view> head(a.begin(), a.end() - 1);
  size_t i = 2;
  Result<LimitSpec> limit = limit_at(s, head, i, {});
  if (!limit.ok()) return s.local().error(limit.error());
  if (i != head.size()) return s.local().error(err::kSyntax);
  Request r = keyed_request(Verb::kAdjust, a[1]);
  r.spec = limit.value();
  r.cost = delta;
  s.request(r, ReplyStyle::kDecision);
}

void cmd_fg_reset(CommandContext& s, Args& a) {
  Request r = keyed_request(Verb::kReset, a[1]);
  s.request(r, ReplyStyle::kInteger);
}

// FG.ACQUIRE key limit ttl_ms [HOLDER id | BOUND]  |  FG.ACQUIRE key [policy] [HOLDER id | BOUND]
void cmd_fg_acquire(CommandContext& s, Args& a) {
  Request r = keyed_request(Verb::kAcquire, a[1]);
  size_t i = 2;
  int64_t limit;
  if (a.size() > 2 && parse_int(a[2], limit)) {
    if (a.size() < 4) return s.local().error(err::wrong_arity("fg.acquire"));
    int64_t ttl_ms;
    if (!parse_ms(s, a[3], ttl_ms)) return;
    Result<LimitSpec> spec = make_limit(Kind::kConcurrency, limit, 0, ttl_ms);
    if (!spec.ok()) return s.local().error(spec.error());
    r.spec = spec.value();
    i = 4;
  } else {
    Result<LimitSpec> spec = limit_at(s, a, i, {"holder", "bound"});
    if (!spec.ok()) return s.local().error(spec.error());
    r.spec = spec.value();
  }
  for (; i < a.size(); ++i) {
    if (iequals(a[i], "holder") && i + 1 < a.size() && !a[i + 1].empty() && r.holder.empty() &&
        !r.bound) {
      r.holder = a[++i];
    } else if (iequals(a[i], "bound") && r.holder.empty() && !r.bound) {
      r.bound = true;  // this connection holds it: renewed while it lives, released after
    } else {
      return s.local().error(err::kSyntax);
    }
  }
  s.request(r, ReplyStyle::kAcquire);
}

void cmd_fg_renew(CommandContext& s, Args& a) {
  Request r = keyed_request(Verb::kRenew, a[1]);
  if (!parse_lease_id(a[2], r.lease)) return s.local().error(err::kBadLease);
  if (!parse_ms(s, a[3], r.ttl_ms)) return;
  s.request(r, ReplyStyle::kInteger);
}

void cmd_fg_release(CommandContext& s, Args& a) {
  Request r = keyed_request(Verb::kRelease, a[1]);
  if (!parse_lease_id(a[2], r.lease)) return s.local().error(err::kBadLease);
  s.request(r, ReplyStyle::kInteger);
}

void cmd_fg_count(CommandContext& s, Args& a) {
  Request r = keyed_request(Verb::kCount, a[1]);
  s.request(r, ReplyStyle::kInteger);
}

// A holder's leases are renewed or released only where its user may change the key: one
// tenant cannot release another's permits by naming its holder.
static const AclUser* holder_user(CommandContext& s) {
  const AclUser* u = s.acl().user();
  return u && !u->unrestricted() ? u : nullptr;
}

// Cluster-wide: the core sends it to every member and adds up their counts.
void cmd_fg_heartbeat(CommandContext& s, Args& a) {
  Request r;
  r.verb = Verb::kHeartbeat;
  r.holder = a[1];
  r.user = holder_user(s);
  if (!parse_ms(s, a[2], r.ttl_ms)) return;
  s.request(r, ReplyStyle::kInteger);
}

void cmd_fg_releaseall(CommandContext& s, Args& a) {
  Request r;
  r.verb = Verb::kReleaseAll;
  r.holder = a[1];
  r.user = holder_user(s);
  s.request(r, ReplyStyle::kInteger);
}

}  // namespace fg
