// CL.THROTTLE and the FG.* family: parse arguments, then one op to the owning shard.
#include <string>

#include "command_util.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "key_table.hpp"
#include "session.hpp"

namespace fg {

namespace {
bool check_key(Session& s, std::string_view key) {
  if (key.size() <= kMaxKeyLen) return true;
  s.local().error(err::kKeyTooLong);
  return false;
}

// [COST n] after a limit; n >= 0 (0 evaluates without consuming).
bool parse_cost(Session& s, Args& a, size_t i, int64_t& cost) {
  cost = 1;
  for (; i < a.size(); ++i) {
    if (iequals(a[i], "cost") && i + 1 < a.size()) {
      if (!parse_int(a[i + 1], cost) || cost < 0 || cost > kMaxCount) {
        s.local().error(err::kNotInteger);
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

void take_or_peek(Session& s, Args& a, OpCode code) {
  if (!check_key(s, a[1])) return;
  size_t i = 2;
  LimitSpec spec;
  std::string error;
  if (!resolve_limit(a, i, s.policies(), {"cost"}, spec, error)) {
    s.local().error(error);
    return;
  }
  if (spec.kind == Kind::kConcurrency) {
    s.local().error(err::kConcurrencyPolicy);
    return;
  }
  int64_t cost;
  if (!parse_cost(s, a, i, cost)) return;
  ShardOp& op = s.add_op(code, ReplyKind::kDecision, a[1]);
  op.spec = spec;
  op.cost = cost;
}

bool parse_ttl(Session& s, std::string_view v, int64_t& ttl_ns) {
  int64_t ms;
  if (!parse_int(v, ms)) {
    s.local().error(err::kNotInteger);
    return false;
  }
  if (ms <= 0 || ms > kMaxPeriodNs / 1'000'000) {
    s.local().error(ms <= 0 ? err::kNotPositive : err::kNotInteger);
    return false;
  }
  ttl_ns = ms * 1'000'000;
  return true;
}
}  // namespace

void cmd_cl_throttle(Session& s, Args& a) {
  if (!check_key(s, a[1])) return;
  int64_t burst, count, period, qty = 1;
  if (!parse_int(a[2], burst) || !parse_int(a[3], count) || !parse_int(a[4], period) ||
      (a.size() == 6 && !parse_int(a[5], qty))) {
    s.local().error(err::kNotInteger);
    return;
  }
  if (burst < 0 || count <= 0 || period <= 0 || qty < 0) {
    s.local().error(err::kNotPositive);
    return;
  }
  if (period > kMaxPeriodNs / kNsPerSec) {
    s.local().error(err::kNotInteger);
    return;
  }
  LimitSpec spec = LimitSpec::gcra(burst, count, period * kNsPerSec);
  if (!validate(spec).empty()) {
    s.local().error(err::kNotInteger);
    return;
  }
  ShardOp& op = s.add_op(OpCode::kTake, ReplyKind::kThrottle, a[1]);
  op.spec = spec;
  op.cost = qty;
}

void cmd_fg_take(Session& s, Args& a) { take_or_peek(s, a, OpCode::kTake); }
void cmd_fg_peek(Session& s, Args& a) { take_or_peek(s, a, OpCode::kPeek); }

void cmd_fg_reset(Session& s, Args& a) {
  if (!check_key(s, a[1])) return;
  s.add_op(OpCode::kReset, ReplyKind::kInteger, a[1]);
}

// FG.ACQUIRE key limit ttl_ms [HOLDER id]  |  FG.ACQUIRE key policy [HOLDER id]
void cmd_fg_acquire(Session& s, Args& a) {
  if (!check_key(s, a[1])) return;
  LimitSpec spec;
  size_t i = 2;
  int64_t limit;
  if (a.size() > 2 && parse_int(a[2], limit)) {
    if (a.size() < 4) {
      s.local().error("ERR wrong number of arguments for 'fg.acquire' command");
      return;
    }
    int64_t ttl_ns;
    if (!parse_ttl(s, a[3], ttl_ns)) return;
    if (limit <= 0) {
      s.local().error(err::kNotPositive);
      return;
    }
    spec = LimitSpec::concurrency(limit, ttl_ns);
    std::string why = validate(spec);
    if (!why.empty()) {
      s.local().error("ERR " + why);
      return;
    }
    i = 4;
  } else {
    std::string error;
    if (!resolve_limit(a, i, s.policies(), {"holder", "bound"}, spec, error)) {
      s.local().error(error);
      return;
    }
    if (spec.kind != Kind::kConcurrency) {
      s.local().error(err::kNotConcurrencyPolicy);
      return;
    }
  }
  std::string_view holder;
  for (; i < a.size(); ++i) {
    if (iequals(a[i], "holder") && i + 1 < a.size() && !a[i + 1].empty() && holder.empty()) {
      holder = a[++i];
    } else if (iequals(a[i], "bound") && holder.empty() && s.svc().bound) {
      // This connection holds the lease: renewed while it lives, released when it closes.
      holder = s.keep(s.svc().bound->bind(s.client().id, spec.c / kNsPerMs));
    } else {
      s.local().error(err::kSyntax);
      return;
    }
  }
  ShardOp& op = s.add_op(OpCode::kAcquire, ReplyKind::kAcquire, a[1]);
  op.spec = spec;
  op.ttl_ns = spec.c;
  op.holder = holder;
}

void cmd_fg_renew(Session& s, Args& a) {
  uint64_t id;
  if (!parse_lease_id(a[2], id)) {
    s.local().error(err::kBadLease);
    return;
  }
  int64_t ttl_ns;
  if (!parse_ttl(s, a[3], ttl_ns)) return;
  ShardOp& op = s.add_op(OpCode::kRenew, ReplyKind::kInteger, a[1]);
  op.lease_id = id;
  op.ttl_ns = ttl_ns;
}

void cmd_fg_release(Session& s, Args& a) {
  uint64_t id;
  if (!parse_lease_id(a[2], id)) {
    s.local().error(err::kBadLease);
    return;
  }
  s.add_op(OpCode::kRelease, ReplyKind::kInteger, a[1]).lease_id = id;
}

void cmd_fg_count(Session& s, Args& a) { s.add_op(OpCode::kCount, ReplyKind::kLeaseCount, a[1]); }

void cmd_fg_heartbeat(Session& s, Args& a) {
  if (a[1].empty()) {
    s.local().error(err::kSyntax);
    return;
  }
  int64_t ttl_ns;
  if (!parse_ttl(s, a[2], ttl_ns)) return;
  ShardOp& op = s.add_broadcast(OpCode::kHeartbeat, ReplyKind::kInteger);
  op.holder = a[1];
  op.ttl_ns = ttl_ns;
  s.add_fanout(a);  // cluster: the holder's leases live on every node
}

void cmd_fg_releaseall(Session& s, Args& a) {
  if (a[1].empty()) {
    s.local().error(err::kSyntax);
    return;
  }
  s.add_broadcast(OpCode::kReleaseHolder, ReplyKind::kInteger).holder = a[1];
  s.add_fanout(a);  // cluster: the holder's leases live on every node
}

}  // namespace fg
