// The request core: check, route, shard op or forward, outcome, metrics.
#include "request_core.hpp"

#include "acl.hpp"
#include "errors.hpp"
#include "forward_codec.hpp"
#include "gcra.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "request_metrics.hpp"
#include "scan_args.hpp"

namespace fg {

namespace {

constexpr int64_t kMaxReserveMs = 60'000;          // a reservation holds at most a minute
constexpr int64_t kFailClosedRetryNs = kNsPerSec;  // what a fail_closed denial says to wait

OpCode opcode(Verb v) {
  switch (v) {
    case Verb::kTake:
      return OpCode::kTake;
    case Verb::kPeek:
      return OpCode::kPeek;
    case Verb::kReserve:
      return OpCode::kReserve;
    case Verb::kReset:
      return OpCode::kReset;
    case Verb::kAcquire:
      return OpCode::kAcquire;
    case Verb::kRenew:
      return OpCode::kRenew;
    case Verb::kRelease:
      return OpCode::kRelease;
    case Verb::kCount:
      return OpCode::kCount;
    case Verb::kHeartbeat:
      return OpCode::kHeartbeat;
    case Verb::kReleaseAll:
      return OpCode::kReleaseHolder;
    case Verb::kCommit:
      return OpCode::kCommit;
    case Verb::kData:
      return OpCode::kData;
    case Verb::kAdjust:
      return OpCode::kAdjust;
    case Verb::kCancel:
      break;
  }
  return OpCode::kCancel;
}

void refuse(Outcome& o, Code code, std::string_view text) {
  o.code = code;
  o.error = text;
}

// A text made for one outcome, kept where the door keeps its texts.
std::string_view keep(const Door& d, std::string text) {
  return d.texts->emplace_back(std::move(text));
}

bool ttl_ok(int64_t ttl_ms, Outcome& now) {
  if (ttl_ms <= 0) {
    refuse(now, Code::kError, err::kNotPositive);
    return false;
  }
  if (ttl_ms > kMaxPeriodNs / kNsPerMs) {
    refuse(now, Code::kError, err::kNotInteger);
    return false;
  }
  return true;
}

// A shard's answer to an op, as an outcome: the one status mapping.
[[gnu::always_inline]] inline void from_op(const ShardOp& op, Outcome& out) {
  switch (op.status) {
    case OpStatus::kOk:
      break;
    case OpStatus::kWrongType:
      return refuse(out, Code::kWrongType, err::kWrongType);
    case OpStatus::kKeyLimit:
      return refuse(out, Code::kKeyLimit, err::kKeyLimit);
    case OpStatus::kNoMemory:
      return refuse(out, Code::kKeyLimit, err::kOomMaxmemory);
    case OpStatus::kUserKeys:
      return refuse(out, Code::kKeyLimit, err::kOomUserKeys);
    case OpStatus::kUserMemory:
      return refuse(out, Code::kKeyLimit, err::kOomUserMemory);
    case OpStatus::kNotOwner:
      return refuse(out, Code::kTryAgain, err::kSlotMoving);
    case OpStatus::kNotReplicated:  // (an acquire's lease is given back: give_back_unreplicated)
      return refuse(out, Code::kNotReplicated,
                    op.code == OpCode::kAcquire ? err::kLeaseNotReplicated : err::kNotReplicated);
  }
  switch (op.code) {
    case OpCode::kTake:
    case OpCode::kPeek:
    case OpCode::kReserve:
    case OpCode::kAdjust:
      out.decision = op.decision;
      if (op.code == OpCode::kReserve) out.ticket = op.lease_id;
      break;
    case OpCode::kAcquire:
      out.acquire = op.acquire;
      out.limit = op.spec.a;
      break;
    case OpCode::kData:
      if (op.reply->is_error()) return refuse(out, Code::kError, op.reply->items[0].s);
      out.reply = op.reply;
      break;
    default:
      out.value = op.value;
      break;
  }
}

}  // namespace

RequestCore::RequestCore(Services& svc) : svc_(svc), metrics_(*svc.metrics) {}

int64_t reported_limit(const LimitSpec& spec) {
  return spec.kind == Kind::kGcra ? spec.a + 1 : spec.a;
}

bool RequestCore::must_wait(std::string_view key, const Routing* rt) const {
  return rt && fg::must_wait(*rt, key_slot(key));
}

// Everything a request can be refused for before it is routed, for every door alike.
// (Inlined: it is on every request's way.)
[[gnu::always_inline]] inline bool RequestCore::check(const Request& r, Outcome& now) const {
  if (keyed(r.verb) && r.key.size() > kMaxKeyLen) {
    refuse(now, Code::kError, err::kKeyTooLong);
    return false;
  }
  switch (r.verb) {
    case Verb::kTake:
    case Verb::kPeek:
    case Verb::kReserve:
      if (r.spec.kind == Kind::kConcurrency) {
        refuse(now, Code::kError, err::kConcurrencyPolicy);
        return false;
      }
      if (r.cost < 0 || r.cost > kMaxCount) {
        refuse(now, Code::kError, err::kNotInteger);
        return false;
      }
      if (r.verb == Verb::kReserve && (r.ttl_ms <= 0 || r.ttl_ms > kMaxReserveMs)) {
        refuse(now, Code::kError, err::kReserveTtl);
        return false;
      }
      return true;
    case Verb::kAdjust:
      if (r.spec.kind == Kind::kConcurrency) {
        refuse(now, Code::kError, err::kAdjustConcurrency);
        return false;
      }
      if (r.cost < -kMaxCount || r.cost > kMaxCount) {
        refuse(now, Code::kError, err::kNotInteger);
        return false;
      }
      return true;
    case Verb::kAcquire:
      if (r.spec.kind != Kind::kConcurrency) {
        refuse(now, Code::kError, err::kNotConcurrencyPolicy);
        return false;
      }
      if (r.bound && !r.holder.empty()) {
        refuse(now, Code::kError, err::kSyntax);
        return false;
      }
      if (r.bound && !svc_.bound) {
        refuse(now, Code::kError, err::kNoBound);
        return false;
      }
      return true;
    case Verb::kRenew:
      if (r.lease == 0) {
        refuse(now, Code::kError, err::kBadLease);
        return false;
      }
      return ttl_ok(r.ttl_ms, now);
    case Verb::kRelease:
    case Verb::kCommit:
    case Verb::kCancel:
      if (r.lease == 0) {
        refuse(now, Code::kError, err::kBadLease);
        return false;
      }
      return true;
    case Verb::kHeartbeat:
    case Verb::kReleaseAll:
      if (r.holder.empty()) {
        refuse(now, Code::kError, err::kHolderRequired);
        return false;
      }
      return r.verb == Verb::kReleaseAll || ttl_ok(r.ttl_ms, now);
    case Verb::kReset:
    case Verb::kCount:
      return true;
    case Verb::kData: {
      const auto& a = *r.args;
      bool long_key = false;
      each_data_key(r.data, a, [&](size_t j) { long_key |= a[j].size() > kMaxKeyLen; });
      if (long_key) refuse(now, Code::kError, err::kKeyTooLong);
      return !long_key;
    }
  }
  return true;
}

Pending RequestCore::submit(const Request& r, const Door& d, Flight& f, Outcome& now) {
  Pending p;
  p.verb = r.verb;
  p.metric = r.metric;
  if (!check(r, now)) {
    count(p, now, r.spec.policy, r.key, d);
    return p;
  }
  std::string_view holder = r.holder;
  // This connection holds the lease: renewed while it lives, released after. Only an acquire
  // takes a lease; the flag on any other request means nothing.
  if (r.bound && r.verb == Verb::kAcquire) {
    holder = f.strings.emplace_back(svc_.bound->bind(d.client_id, r.spec.c / kNsPerMs));
  }
  uint32_t slot = 0;
  // KEYS and SCAN over every key this node serves (no key to route by; Redis Cluster's
  // are node-local too), unless their pattern lies in one slot (r.key is then the pattern).
  // A script that declares no key runs here too, on the keys this node serves.
  const bool every_key = r.verb == Verb::kData && r.key.empty() &&
                         (data_cmd_info(r.data).every_shard || r.data == DataCmd::kEval);
  if (d.routing && keyed(r.verb) && !every_key) {
    slot = key_slot(r.key);
    if (r.verb == Verb::kData && !data_cmd_info(r.data).every_shard && !one_slot(r, slot)) {
      refuse(now, Code::kError, err::kCrossSlot);
      count(p, now, 0, r.key, d);
      return p;
    }
    RouteDecision rd = route(*d.routing, slot, d.mode, d.hops, svc_.clock->now_ns());
    using A = RouteDecision::Action;
    switch (rd.action) {
      case A::kServe:
        break;
      case A::kForward:
        if (svc_.forwarder) {
          if (r.verb == Verb::kTake && d.hops == 0 && r.wait_ms == 0 && svc_.slices.on()) {
            return forward_hot(r, d, f, d.routing->nodes[rd.node], p, now);
          }
          return forward(r, holder, d, f, d.routing->nodes[rd.node], p);
        }
        [[fallthrough]];  // (a node with no way to forward: the client must go there)
      case A::kMove: {
        const RouteNode& n = d.routing->nodes[rd.node];
        svc_.counters.moved.fetch_add(1, std::memory_order_relaxed);
        now.code = Code::kMoved;
        now.slot = slot;
        now.node = n.id;  // (the snapshot outlives the read the door encodes it in)
        now.error =
            keep(d, err::moved(slot, n.resp_host, d.native_ports ? n.native_port : n.resp_port));
        count(p, now, r.spec.policy, r.key, d);
        return p;
      }
      case A::kUnavailable:
        answer_unavailable(r, rd, d, now);
        conclude(p, now, r.spec.shadow, r.spec.policy, r.key, d);
        return p;
      case A::kRefuse:
        refuse(now, rd.code, keep(d, std::move(rd.error)));
        count(p, now, r.spec.policy, r.key, d);
        return p;
    }
  }
  if (r.verb == Verb::kData) return serve_data(r, d, f, slot, p);
  ShardOp& op = f.batch->ops.emplace_back();
  op.code = opcode(r.verb);
  // (A routed key's slot is known: its shard follows without a second CRC.)
  op.shard = !keyed(r.verb) ? kAllShards
             : d.routing    ? svc_.shards->shard_of_slot(slot)
                            : svc_.shards->shard_of(r.key);
  op.key = r.key;
  op.slot = static_cast<uint16_t>(slot);
  op.spec = r.spec;
  op.cost = r.cost;
  op.ttl_ns = r.verb == Verb::kAcquire ? r.spec.c : r.ttl_ms * kNsPerMs;
  op.wait_ns = r.verb == Verb::kTake ? r.wait_ms * kNsPerMs : 0;
  op.lease_id = r.lease;
  op.holder = holder;
  op.caller = r.user;  // (a holder's leases: only those on keys its user may change)
  op.account = r.asker ? r.asker->account() : Accounts::kNone;
  op.abort = r.txn ? &f.aborts[r.txn - 1] : nullptr;
  p.at = Pending::At::kShard;
  p.index = static_cast<uint32_t>(f.batch->ops.size() - 1);
  if (!keyed(r.verb)) fan_out(r, d, f, p);
  return p;
}

// Whether every key of a data command hashes to `slot` (Redis Cluster's rule: a command's
// keys are served together only when they share a slot).
bool RequestCore::one_slot(const Request& r, uint32_t slot) {
  // (one key: the one routed by; a script declares several)
  if (data_cmd_info(r.data).merge == Merge::kNone && r.data != DataCmd::kEval) return true;
  const auto& a = *r.args;
  bool one = true;
  each_data_key(r.data, a, [&](size_t j) { one = one && key_slot(a[j]) == slot; });
  return one;
}

// A data command served here: one shard op, or one per key for the commands with several
// (each key goes to its own shard; in a cluster they share a slot, hence a shard, and run
// back to back in one turn of it, so the command stays atomic there).
Pending RequestCore::serve_data(const Request& r, const Door& d, Flight& f, uint32_t slot,
                                Pending p) {
  const auto& a = *r.args;
  const bool cluster = d.routing != nullptr;
  const DataCmdInfo& info = data_cmd_info(r.data);
  p.at = Pending::At::kData;
  p.index = static_cast<uint32_t>(f.batch->ops.size());
  auto add = [&](auto first, auto last) {
    std::vector<std::string_view>& w = f.argvs.next();
    w.assign(first, last);
    ShardOp& op = f.batch->ops.emplace_back();
    op.code = OpCode::kData;
    op.data = r.data;
    op.resp3 = r.resp3;
    op.waited = r.waited;
    op.key = w.size() > 1 ? w[1] : std::string_view();
    // In a cluster every key of the command is in `slot` (checked): no second CRC.
    op.shard = cluster && !op.key.empty() ? svc_.shards->shard_of_slot(slot)
                                          : svc_.shards->shard_of(op.key);
    op.slot = static_cast<uint16_t>(slot);
    op.args = &w;
    op.reply = &f.replies.next();
    op.abort = r.txn ? &f.aborts[r.txn - 1] : nullptr;
    op.account = r.asker ? r.asker->account() : Accounts::kNone;
    op.spec.sync = r.spec.sync;
    op.reply_room = d.reply_room;
    ++p.parts;
  };
  if (r.data == DataCmd::kEval) {
    add(a.begin(), a.end());
    ShardOp& op = f.batch->ops.back();
    op.key = r.key;
    op.caller = r.user;
    if (cluster && !r.key.empty()) {
      op.shard = svc_.shards->shard_of(r.key);  // its slot's shard: every key it may touch
    } else {
      // Standalone a script may touch any key, declared or not (as in Redis), and a
      // cluster script that declares none any key this node serves: it runs with every
      // shard held, as one step.
      op.shard = kAllShards;
      f.atomic_all(svc_.shards->size());
    }
  } else if (info.every_shard && r.key.empty() && r.data == DataCmd::kScan) {
    // SCAN: one step on the shard its cursor names (scan_cursor).
    add(a.begin(), a.end());
    ShardOp& op = f.batch->ops.back();
    op.key = {};
    op.shard = scan_cursor(f, op, svc_.shards->size());
    op.every_slot = true;
  } else if (info.every_shard && r.key.empty()) {
    for (size_t i = 0; i < svc_.shards->size(); ++i) {
      add(a.begin(), a.end());
      ShardOp& op = f.batch->ops.back();
      op.key = {};
      op.shard = static_cast<uint16_t>(i);
      op.every_slot = true;
    }
  } else if (info.merge == Merge::kTogether) {
    // One op on its first key's shard; standalone, the shards of its other keys are held
    // with it as one step.
    add(a.begin(), a.end());
    ShardOp& op = f.batch->ops.back();
    op.key = r.key;
    op.shard = cluster ? svc_.shards->shard_of_slot(slot) : svc_.shards->shard_of(r.key);
    if (!cluster && svc_.shards->size() > 1) {
      uint64_t shards = 0;
      together_keys(r.data, a).each(
          [&](size_t j) { shards |= uint64_t{1} << svc_.shards->shard_of(a[j]); });
      f.hold_together(shards);
    }
  } else if (info.merge == Merge::kNone || info.every_shard) {
    add(a.begin(), a.end());
    if (key_after_subcommand(r.data)) {  // (its key is its third word)
      ShardOp& op = f.batch->ops.back();
      op.key = r.key;
      op.shard = cluster ? svc_.shards->shard_of_slot(slot) : svc_.shards->shard_of(r.key);
    }
    if (info.every_shard) {
      ShardOp& op = f.batch->ops.back();
      op.key = r.key;  // the pattern: its slot's shard
      op.shard = svc_.shards->shard_of(r.key);
      if (r.data == DataCmd::kScan) scan_cursor(f, op, svc_.shards->size());
    }
  } else {
    for (size_t j = 1; j < a.size(); j += info.step) {
      const std::string_view one[] = {a[0], a[j], info.step == 2 ? a[j + 1] : std::string_view()};
      add(one, one + 1 + info.step);
    }
    // Its keys on several shards (standalone): still atomic, as one multi-shard step.
    if (r.data != DataCmd::kWatch) f.atomic_from(p.index);
  }
  return p;
}

// A node's SCAN cursor is a shard's cursor and the shard's number: shard = cursor mod S,
// the shard's own cursor = cursor / S (its table's: KeyTable::scan). The step goes to that
// shard (or, for a pattern in one slot, to the slot's shard), with its own cursor in place of
// the node's; scan_reply makes the node's cursor of the shard's answer. A cursor that does
// not parse is left as it is, for the shard to refuse in Redis's words.
uint16_t RequestCore::scan_cursor(Flight& f, ShardOp& op, size_t shards) {
  // (the words are this flight's own copy, f.argvs: the shard reads its cursor there)
  auto& w = const_cast<std::vector<std::string_view>&>(*op.args);
  uint64_t cursor = 0;
  if (!parse_unsigned_cursor(w[1], cursor)) return op.shard;
  const uint64_t n = std::max<size_t>(shards, 1);
  w[1] = f.strings.emplace_back(std::to_string(cursor / n));
  return static_cast<uint16_t>(cursor % n);
}

// The node's cursor from a shard's answer [its next cursor, keys]: the shard's next step, or
// the next shard's first (every shard in turn), or 0 when the last one is done. (A pattern
// in one slot scans one shard: its end is the end.)
void RequestCore::scan_reply(const ShardOp& op, DataReply& merged) const {
  DataReply& part = *op.reply;
  uint64_t next = 0;
  if (part.items.size() < 3 || !parse_unsigned_cursor(part.items[1].s, next)) {
    merged = std::move(part);
    return;
  }
  const uint64_t n = std::max<size_t>(svc_.shards->size(), 1);
  uint64_t node_next = 0;
  if (next != 0) {
    node_next = next * n + op.shard;
  } else if (op.every_slot && op.shard + 1u < n) {
    node_next = op.shard + 1u;
  }
  merged.array(2);
  merged.bulk(std::to_string(node_next));
  merged.items.reserve(part.items.size());
  for (size_t i = 2; i < part.items.size(); ++i) merged.items.push_back(std::move(part.items[i]));
}

// The parts of a split data command, answered as one (data_cmd.hpp's Merge).
void RequestCore::merge_data(const Pending& p, Flight& f, Outcome& out) {
  const ShardOp& first = f.batch->ops[p.index];
  DataReply& merged = f.replies.next();
  if (data_cmd_info(first.data).merge == Merge::kScan) {  // SCAN: one shard's step
    Outcome part;
    from_op(first, part);
    if (!part.ok()) {
      out = part;
      return;
    }
    scan_reply(first, merged);
    out.reply = &merged;
    return;
  }
  if (data_cmd_info(first.data).merge == Merge::kPick) {  // RANDOMKEY: one part's key
    std::vector<const DataReply*> parts;
    for (uint32_t k = 0; k < p.parts; ++k) {
      ShardOp& op = f.batch->ops[p.index + k];
      from_op(op, out);
      if (!out.ok()) return;
      parts.push_back(op.reply);
    }
    const ReplyItem* key = pick_part(parts);
    if (key) {
      merged.bulk(key->s);
    } else {
      merged.null();
    }
    out.reply = &merged;
    return;
  }
  int64_t sum = 0;
  std::vector<ReplyItem*> items;  // (moved into the merged reply: a KEYS part may be big)
  for (uint32_t k = 0; k < p.parts; ++k) {
    ShardOp& op = f.batch->ops[p.index + k];
    Outcome part;
    from_op(op, part);
    if (!part.ok()) {  // (the first refusal answers for the command)
      out = part;
      return;
    }
    if (!op.reply->items.empty()) sum += op.reply->items[0].n;
    for (size_t i = 1; i < op.reply->items.size(); ++i) items.push_back(&op.reply->items[i]);
  }
  switch (data_cmd_info(first.data).merge) {
    case Merge::kSum:
      merged.integer(sum);
      break;
    case Merge::kConcat:
      merged.array(static_cast<int64_t>(items.size()));
      merged.items.reserve(items.size() + 3);
      for (ReplyItem* i : items) merged.items.push_back(std::move(*i));
      break;
    case Merge::kOk:
    case Merge::kNone:
    case Merge::kTogether:  // (never split: one part)
    case Merge::kPick:      // (above)
    case Merge::kScan:      // (above)
      merged.ok();
      break;
  }
  out.reply = &merged;
}

// No copy of the key's state can be reached: a named policy's on_unavailable answers (a
// decision that says so), else the error. Never a bare failure nobody thought about.
void RequestCore::answer_unavailable(const Request& r, RouteDecision& rd, const Door& d,
                                     Outcome& now) {
  const bool limited = rate_verb(r.verb) || r.verb == Verb::kAcquire;
  const FailMode mode = limited ? r.spec.on_unavailable : FailMode::kError;
  if (mode == FailMode::kError) {
    svc_.counters.unavailable.fetch_add(1, std::memory_order_relaxed);
    return refuse(now, rd.code, keep(d, std::move(rd.error)));
  }
  const bool open = mode == FailMode::kOpen;
  (open ? svc_.counters.fail_open : svc_.counters.fail_closed)
      .fetch_add(1, std::memory_order_relaxed);
  now.unavailable = mode;
  if (r.verb == Verb::kAcquire) {  // no lease is issued: nothing to renew or release
    now.acquire.granted = open;
    now.acquire.retry_after_ns = open ? kNever : kFailClosedRetryNs;
    now.limit = r.spec.a;
    return;
  }
  now.decision.allowed = open;
  now.decision.limit = reported_limit(r.spec);
  now.decision.remaining = open ? now.decision.limit : 0;
  now.decision.retry_after_ns = open ? kNever : kFailClosedRetryNs;
  now.decision.reset_after_ns = 0;
}

Pending RequestCore::forward(const Request& r, std::string_view holder, const Door& d, Flight& f,
                             const RouteNode& to, Pending p) {
  // One call per owner (and hop count) per flight, whichever connections its requests are from.
  const uint32_t hops = d.hops + 1;
  uint32_t ci = 0;
  while (ci < f.forwards.size() &&
         (f.forwards[ci].node_id != to.id || f.forwards[ci].batch().hops() != hops)) {
    ++ci;
  }
  if (ci == f.forwards.size()) {
    ForwardCall& c = f.forwards.emplace_back();
    c.node_id = to.id;
    c.peer_addr = to.peer_addr;
    c.batch().set_hops(hops);
  }
  ForwardCall& c = f.forwards[ci];
  f.touch_call(ci);
  encode_forwarded(r, holder, *c.batch().add_requests());
  c.specs.push_back(r.spec);
  svc_.counters.forwarded.fetch_add(1, std::memory_order_relaxed);
  p.at = Pending::At::kForward;
  p.index = ci;
  p.item = static_cast<uint32_t>(c.batch().requests_size() - 1);
  return p;
}

// A take of a key another node owns, when hot keys are sliced (hot_slices.hpp): admitted
// from this node's slice of it if one covers it; else forwarded — with a request for a new
// slice after it in the same call, once the key is hot.
Pending RequestCore::forward_hot(const Request& r, const Door& d, Flight& f, const RouteNode& to,
                                 Pending p, Outcome& now) {
  int64_t ask = 0;
  if (svc_.slices.take(r.key, r.spec, r.cost, svc_.clock->now_ns(), d.routing->nodes.size(),
                       now.decision, ask)) {
    conclude(p, now, r.spec.shadow, r.spec.policy, r.key, d);
    return p;
  }
  p = forward(r, r.holder, d, f, to, p);
  if (ask > 0) {
    Request slice = r;
    slice.cost = ask;
    forward(slice, r.holder, d, f, to, Pending{});
    p.slice = true;
  }
  return p;
}

// A holder's leases live wherever their keys do: a client's heartbeat or release-all goes
// to every other member of the table too, and the counts add up.
void RequestCore::fan_out(const Request& r, const Door& d, Flight& f, Pending& p) {
  if (!d.routing || d.hops > 0 || r.here_only || !svc_.forwarder) return;
  p.at = Pending::At::kFanout;
  p.item = static_cast<uint32_t>(f.fanout.size());
  for (const RouteNode& n : d.routing->nodes) {
    if (n.self || !n.in_table ||
        !(n.state == MemberState::kAlive || n.state == MemberState::kSuspect)) {
      continue;
    }
    Pending part = forward(r, r.holder, d, f, n, Pending{});
    f.fanout.emplace_back(part.index, part.item);
    ++p.parts;
  }
}

bool RequestCore::from_forward(Flight& f, uint32_t call, uint32_t item, Outcome& out) {
  ForwardCall& c = f.forwards[call];
  if (c.ok && !c.decoded) {
    c.decoded = true;
    if (!c.outcomes().ParseFromString(c.body)) c.outcomes().Clear();
  }
  const Verb verb = static_cast<Verb>(c.batch().requests(static_cast<int>(item)).verb());
  if (c.ok && static_cast<int>(item) < c.outcomes().outcomes_size()) {
    decode_outcome(c.outcomes().outcomes(static_cast<int>(item)), verb, out, f.forwarded);
    return true;
  }
  svc_.counters.forward_failures.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Why a forward brought no answer, as a client reads it.
std::string_view RequestCore::silence(const Flight& f, uint32_t call) {
  const ForwardCall& c = f.forwards[call];
  return c.ok ? std::string_view("malformed reply") : std::string_view(c.body);
}

void RequestCore::finish(const Pending& p, Flight& f, const Door& d, Outcome& out) {
  uint16_t policy = 0;
  bool shadow = false;
  std::string_view key;
  switch (p.at) {
    case Pending::At::kNow:
      return;  // answered (and counted) by submit()
    case Pending::At::kShard: {
      const ShardOp& op = f.batch->ops[p.index];
      from_op(op, out);
      if (no_room(op.status) && op.spec.on_unavailable != FailMode::kError &&
          (rate_verb(p.verb) || p.verb == Verb::kAcquire)) {
        // No room for a new limiter key (max-keys, maxmemory, the user's share): the policy's
        // stated fail mode answers, as when no copy of the state can be reached.
        RouteDecision rd;
        rd.code = out.code;
        rd.error = std::string(out.error);
        Request r;
        r.verb = p.verb;
        r.spec = op.spec;
        out = Outcome{};
        answer_unavailable(r, rd, d, out);
      }
      policy = op.spec.policy;
      shadow = op.spec.shadow;
      key = op.key;
      break;
    }
    case Pending::At::kForward: {
      const ForwardCall& c = f.forwards[p.index];
      if (!from_forward(f, p.index, p.item, out)) {
        // The owner did not answer: the policy's fail mode, as when it is known to be down.
        RouteDecision rd;
        rd.code = Code::kTryAgain;
        rd.error = err::owner_silent(c.node_id, silence(f, p.index));
        Request r;
        r.verb = p.verb;
        r.spec = c.specs[p.item];
        answer_unavailable(r, rd, d, out);
      }
      policy = c.specs[p.item].policy;
      shadow = c.specs[p.item].shadow;
      key = c.batch().requests(static_cast<int>(p.item)).key();
      if (p.slice) {
        // The slice asked for with it: kept if granted (nothing kept if no answer).
        Outcome slice;
        if (!from_forward(f, p.index, p.item + 1, slice)) slice.code = Code::kTryAgain;
        svc_.slices.granted(key, c.specs[p.item + 1],
                            c.batch().requests(static_cast<int>(p.item + 1)).cost(), slice,
                            svc_.clock->now_ns());
      }
      break;
    }
    case Pending::At::kData:
      if (p.parts == 1 && data_cmd_info(f.batch->ops[p.index].data).merge != Merge::kPick &&
          data_cmd_info(f.batch->ops[p.index].data).merge != Merge::kScan) {
        from_op(f.batch->ops[p.index], out);
      } else {
        merge_data(p, f, out);
      }
      key = f.batch->ops[p.index].key;
      break;
    case Pending::At::kFanout: {
      from_op(f.batch->ops[p.index], out);
      for (uint32_t k = 0; k < p.parts && out.ok(); ++k) {
        const auto [call, item] = f.fanout[p.item + k];
        Outcome part;
        const bool answered = from_forward(f, call, item, part);
        if (answered && part.ok()) {
          out.value += part.value;
        } else {
          // That member's share of the holder's leases was not reached: say so.
          refuse(out, Code::kTryAgain,
                 keep(d, err::member_silent(f.forwards[call].node_id,
                                            answered ? part.error : silence(f, call))));
        }
      }
      break;
    }
  }
  conclude(p, out, shadow, policy, key, d);
}

// Shadow mode: the state counted as the enforcing policy would have (a denial took
// nothing), and the request is allowed all the same; the denial is counted as the policy's
// would-be denial. Every decision passes here (from a shard, an owner, or a fail mode), so
// every door answers alike.
void RequestCore::conclude(const Pending& p, Outcome& out, bool shadow, uint16_t policy,
                           std::string_view key, const Door& d) const {
  if (shadow && out.ok() && rate_verb(p.verb) && !out.allowed()) {
    out.shadow_denied = true;
    out.decision.allowed = true;
    out.decision.retry_after_ns = kNever;
    if (out.unavailable == FailMode::kClosed) out.unavailable = FailMode::kOpen;
  }
  count(p, out, policy, key, d);
}

// Metrics, counted once per request by the node whose client asked.
[[gnu::always_inline]] inline void RequestCore::count(const Pending& p, const Outcome& out,
                                                      uint16_t policy, std::string_view key,
                                                      const Door& d) const {
  if (!d.count) return;
  const int64_t latency_us = p.at == Pending::At::kNow ? 0 : d.latency_us;
  if (!out.ok() || !decides(p.verb)) {
    return metrics_.record(p.metric, out.ok() ? RequestResult::kOk : RequestResult::kError,
                           latency_us);
  }
  const bool allowed = out.allowed();
  metrics_.record(p.metric, allowed ? RequestResult::kAllowed : RequestResult::kDenied, latency_us);
  metrics_.decision(policy, allowed, out.shadow_denied);
  if (!allowed) metrics_.denied(key, svc_.clock->now_ns() / kNsPerSec);
  if (RequestMetrics::sample_hot()) metrics_.hot(key, svc_.clock->now_ns() / kNsPerSec);
}

}  // namespace fg
