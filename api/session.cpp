// Session: parse, dispatch, batch, and encode replies in request order.
#include "session.hpp"

#include <cstdlib>

#include "command_util.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "gcra.hpp"
#include "key_slot.hpp"

namespace fg {

namespace {
std::string unknown_command(std::vector<std::string_view>& args) {
  std::string s = "ERR unknown command '";
  s.append(args[0].substr(0, 128));
  s += "', with args beginning with: ";
  for (size_t i = 1; i < args.size() && s.size() < 300; ++i) {
    s += '\'';
    s.append(args[i].substr(0, 128));
    s += "' ";
  }
  return s;
}

void hex16(uint64_t v, char* out) {
  static const char* d = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = d[v & 15];
}
}  // namespace

Session::Session(Services& svc, std::shared_ptr<ClientInfo> client)
    : svc_(svc),
      client_(std::move(client)),
      parser_(svc.settings.parser),
      authenticated_(svc.settings.requirepass.empty()) {}

RespWriter Session::local() { return RespWriter(local_, proto_); }

const PolicySet& Session::policies() {
  if (!policies_) policies_ = svc_.policies->snapshot();
  return *policies_;
}

void Session::set_proto(int p) {
  proto_ = p;
  client_->proto = p;
}

ShardOp& Session::add_op(OpCode code, ReplyKind kind, std::string_view key) {
  ShardOp& op = batch_->ops.emplace_back();
  op.code = code;
  op.key = key;  // the shard hashes it: that thread has the spare cycles
  op.shard = svc_.shards->shard_of(key);
  op.slot = cur_slot_;
  slots_.push_back(
      Slot{SlotType::kOp, kind, cur_cmd_, static_cast<uint32_t>(batch_->ops.size() - 1), 0});
  return op;
}

ShardOp& Session::add_broadcast(OpCode code, ReplyKind kind) {
  ShardOp& op = batch_->ops.emplace_back();
  op.code = code;
  op.shard = kAllShards;
  slots_.push_back(
      Slot{SlotType::kOp, kind, cur_cmd_, static_cast<uint32_t>(batch_->ops.size() - 1), 0});
  return op;
}

void Session::end_local_slot(size_t start) {
  if (local_.size() > start) {
    slots_.push_back(Slot{SlotType::kLocal, ReplyKind::kInteger, cur_cmd_,
                          static_cast<uint32_t>(start),
                          static_cast<uint32_t>(local_.size() - start)});
  }
}

std::pair<uint32_t, uint32_t> Session::forward_to(const RouteNode& node,
                                                  const std::vector<std::string_view>& args) {
  // Join (or open) this read's group for that node.
  uint32_t g = 0;
  while (g < groups_.size() && (*forwards_)[groups_[g]].node_id != node.id) ++g;
  if (g == groups_.size()) {
    groups_.push_back(static_cast<uint32_t>(forwards_->size()));
    ForwardCall& c = forwards_->emplace_back();
    c.node_id = node.id;
    c.peer_addr = node.peer_addr;
    c.proto = proto_;
    c.hops = hops_ + 1;
  }
  ForwardCall& c = (*forwards_)[groups_[g]];
  RespWriter w(c.cmds, 2);
  w.array(args.size());
  for (auto a : args) w.bulk(a);
  return {g, c.count++};
}

void Session::add_fanout(const std::vector<std::string_view>& args) {
  if (!routing_ || forwarded_ || !forwards_ || slots_.empty()) return;
  const Routing& rt = *routing_;
  const uint32_t slot = static_cast<uint32_t>(slots_.size() - 1);
  for (const RouteNode& n : rt.nodes) {
    if (n.self || !n.in_table ||
        !(n.state == MemberState::kAlive || n.state == MemberState::kSuspect)) {
      continue;
    }
    const auto [g, item] = forward_to(n, args);
    addends_.push_back({slot, g, item});
    svc_.counters.forwarded.fetch_add(1, std::memory_order_relaxed);
  }
}

// Cluster mode: serve a keyed command here, or answer it elsewhere (-MOVED, an error, or
// a forward whose reply fills its place later). Commands for a slot whose state is still
// arriving never get here: process() stops before them.
Session::Route Session::route(const std::vector<std::string_view>& args, uint32_t slot) {
  const Routing& rt = *routing_;
  const uint16_t owner = rt.owner[slot];
  const size_t start = local_.size();
  auto answered = [&] {
    end_local_slot(start);
    return Route::kAnswered;
  };
  if (owner == kNoOwner || rt.epoch == 0 || !rt.can_serve()) {
    RespWriter w = local();
    unavailable(w, policy_of(args), rt.can_serve() ? err::kClusterDown : err::kNoQuorum);
    return answered();
  }
  if (static_cast<int>(owner) == rt.self_index) {
    if (rt.serving.test(slot)) return Route::kHere;
    local().error(err::kSlotMoving);  // (arriving slots were held back by process())
    return answered();
  }
  const RouteNode& node = rt.nodes[owner];
  if (node.state == MemberState::kDead || node.state == MemberState::kLeft) {
    // Its replica takes over once the next table is out (well under a second).
    RespWriter w = local();
    unavailable(w, policy_of(args),
                "TRYAGAIN the key's owner (" + node.id + ") is down; a replica takes over shortly");
    return answered();
  }
  using R = NodeSettings::Redirect;
  const R mode = svc_.settings.redirect;
  if (!forwarded_ && (mode == R::kAlways || (mode == R::kAuto && cluster_aware_))) {
    svc_.counters.moved.fetch_add(1, std::memory_order_relaxed);
    local().error("MOVED " + std::to_string(slot) + " " + node.resp_host + ":" +
                  std::to_string(node.resp_port));
    return answered();
  }
  if (!forwards_ || hops_ >= kMaxForwardHops) {
    local().error(err::kSlotMoving);  // the tables disagree for too long: no loops
    return answered();
  }
  // A BOUND lease belongs to this connection: the owner is told the holder name.
  std::vector<std::string_view> bound_args;
  if (svc_.bound && args.size() > 2 && iequals(args[0], "fg.acquire")) {
    for (size_t i = 2; i < args.size(); ++i) {
      if (!iequals(args[i], "bound")) continue;
      int64_t ttl_ms = 0;
      const LimitSpec* p = policy_of(args);
      if (p) {
        ttl_ms = p->c / kNsPerMs;
      } else if (args.size() < 4 || !parse_int(args[3], ttl_ms)) {
        break;  // malformed: the owner answers the error
      }
      bound_args = args;
      bound_args[i] = "HOLDER";
      bound_args.insert(bound_args.begin() + static_cast<long>(i) + 1,
                        keep(svc_.bound->bind(client_->id, ttl_ms)));
      break;
    }
  }
  const auto [g, item] = forward_to(node, bound_args.empty() ? args : bound_args);
  if (const LimitSpec* p = policy_of(args); p && p->on_unavailable != FailMode::kError) {
    forward_policies_.emplace_back(static_cast<uint32_t>(slots_.size()), *p);
  }
  slots_.push_back(Slot{SlotType::kForward, ReplyKind::kInteger, cur_cmd_, g, item});
  svc_.counters.forwarded.fetch_add(1, std::memory_order_relaxed);
  return Route::kAnswered;
}

ProcessResult Session::process(const char* data, size_t len, Batch& batch, ForwardList* forwards) {
  ProcessResult r;
  batch_ = &batch;
  forwards_ = forwards;
  groups_.clear();
  if (svc_.routing && svc_.routing->version() != routing_version_) {
    routing_version_ = svc_.routing->version();
    routing_ = svc_.routing->get();
  }
  const size_t first_op = batch.ops.size();
  arrived_ns_ = steady_ns();
  slots_.clear();
  local_.clear();
  arena_.clear();
  size_t taken = 0;
  while (r.consumed < len && taken < svc_.settings.max_batch_commands && !close_) {
    ParseResult pr = parser_.parse(data + r.consumed, len - r.consumed, args_, arena_);
    if (pr.status == ParseStatus::kNeedMore) break;
    if (pr.status == ParseStatus::kError) {
      svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      cur_cmd_ = kUnknownCommandId;
      const size_t start = local_.size();
      local().error(pr.error);
      end_local_slot(start);
      close_ = true;
      r.consumed = len;
      break;
    }
    if (args_.empty()) {
      r.consumed += pr.consumed;
      continue;
    }
    const CommandSpec* spec = find_command(args_[0]);
    cur_cmd_ = spec ? command_id(spec) : kUnknownCommandId;
    if (spec && (spec->flags & kBarrier) && (batch_->ops.size() > first_op || !groups_.empty())) {
      break;  // after the work ahead of it
    }
    uint32_t slot = 0;
    const bool keyed = routing_ && spec && (spec->flags & kKeyed) && args_.size() >= 2;
    if (keyed) {
      slot = key_slot(args_[1]);
      const Routing& rt = *routing_;
      if (rt.epoch > 0 && static_cast<int>(rt.owner[slot]) == rt.self_index &&
          !rt.serving.test(slot) && rt.awaiting.test(slot)) {
        r.stalled = true;  // its state is on its way here: take it up again shortly
        break;
      }
    }
    r.consumed += pr.consumed;
    ++taken;
    const size_t start = local_.size();
    const size_t ops_before = batch_->ops.size();
    if (!spec) {
      local().error(unknown_command(args_));
    } else if ((spec->arity > 0 && static_cast<int>(args_.size()) != spec->arity) ||
               (spec->arity < 0 && static_cast<int>(args_.size()) < -spec->arity)) {
      local().error(std::string("ERR wrong number of arguments for '") + spec->name + "' command");
    } else if (!authenticated_ && !(spec->flags & kNoAuth)) {
      local().error(err::kNoAuth);
    } else {
      client_->last_cmd.store(spec->name, std::memory_order_relaxed);
      if (keyed) {
        cur_slot_ = static_cast<uint16_t>(slot);
        if (route(args_, slot) != Route::kHere) continue;
      }
      spec->handler(*this, args_);
    }
    if (batch_->ops.size() == ops_before) end_local_slot(start);
  }
  if (taken > 0) {
    svc_.counters.commands.fetch_add(taken, std::memory_order_relaxed);
    client_->last_active_ms.store(svc_.clock->now_ns() / 1'000'000, std::memory_order_relaxed);
  }
  r.close = close_;
  r.submitted = batch_->ops.size() > first_op || !groups_.empty();
  if (!r.submitted) complete(batch);
  batch_ = nullptr;
  policies_.reset();  // the next read sees policy changes
  return r;
}

void Session::complete(const Batch& batch, const ForwardList* forwards) {
  RespWriter w(out_, proto_);
  // Each forward group's replies, split back into one reply per command.
  std::vector<std::vector<std::string_view>> pieces(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ForwardCall& c = (*forwards)[groups_[g]];
    if (!c.ok) continue;
    const char* p = c.replies.data();
    size_t left = c.replies.size();
    while (left > 0 && pieces[g].size() < c.count) {
      const size_t n = resp_value_length(p, left);
      if (n == 0) break;
      pieces[g].emplace_back(p, n);
      p += n;
      left -= n;
    }
  }
  // Fanned-out commands: each other node's integer reply adds to the local one.
  std::vector<int64_t> extra(addends_.empty() ? 0 : slots_.size(), 0);
  for (const auto& [slot, g, item] : addends_) {
    if (pieces[g].size() > item && pieces[g][item].size() > 3 && pieces[g][item][0] == ':') {
      extra[slot] += std::strtoll(pieces[g][item].data() + 1, nullptr, 10);
    }
  }
  const int64_t latency_us = (steady_ns() - arrived_ns_) / 1000;
  const int64_t now_s = svc_.clock->now_ns() / kNsPerSec;
  RequestMetrics& metrics = RequestMetrics::get();
  for (size_t si = 0; si < slots_.size(); ++si) {
    const Slot& s = slots_[si];
    if (s.type == SlotType::kLocal) {
      out_.append(local_, s.index, s.len);
      metrics.record(s.cmd, local_[s.index] == '-' ? RequestResult::kError : RequestResult::kOk,
                     latency_us);
      continue;
    }
    if (s.type == SlotType::kForward) {
      if (pieces[s.index].size() > s.len) {
        out_.append(pieces[s.index][s.len]);
        metrics.record(
            s.cmd,
            pieces[s.index][s.len][0] == '-' ? RequestResult::kError : RequestResult::kForwarded,
            latency_us);
      } else {
        metrics.record(s.cmd, RequestResult::kError, latency_us);
        const ForwardCall& c = (*forwards)[groups_[s.index]];
        svc_.counters.forward_failures.fetch_add(1, std::memory_order_relaxed);
        const LimitSpec* policy = nullptr;
        for (const auto& [at, spec] : forward_policies_)
          if (at == si) policy = &spec;
        unavailable(w, policy,
                    "TRYAGAIN the key's owner (" + c.node_id +
                        ") did not answer: " + (c.ok ? std::string("malformed reply") : c.error));
      }
      continue;
    }
    const ShardOp& op = batch.ops[s.index];
    if (op.status != OpStatus::kOk) {
      metrics.record(s.cmd, RequestResult::kError, latency_us);
    } else if (s.kind == ReplyKind::kAcquire ||
               (op.code == OpCode::kTake &&
                (s.kind == ReplyKind::kDecision || s.kind == ReplyKind::kThrottle))) {
      const bool allowed = s.kind == ReplyKind::kAcquire ? op.acquire.granted : op.decision.allowed;
      metrics.record(s.cmd, allowed ? RequestResult::kAllowed : RequestResult::kDenied, latency_us);
      metrics.decision(op.spec.policy, allowed);
      if (!allowed) metrics.denied(op.key, now_s);
    } else {
      metrics.record(s.cmd, RequestResult::kOk, latency_us);
    }
    if (op.status == OpStatus::kWrongType) {
      w.error(err::kWrongType);
      continue;
    }
    if (op.status == OpStatus::kKeyLimit) {
      w.error(err::kKeyLimit);
      continue;
    }
    if (op.status == OpStatus::kNotOwner) {
      w.error(err::kSlotMoving);
      continue;
    }
    if (op.status == OpStatus::kNotReplicated) {
      w.error(err::kNotReplicated);
      continue;
    }
    const Decision& d = op.decision;
    switch (s.kind) {
      case ReplyKind::kThrottle:
        w.array(5);
        w.integer(d.allowed ? 0 : 1);
        w.integer(d.limit);
        w.integer(d.remaining);
        w.integer(redis_cell_seconds(d.retry_after_ns));
        w.integer(redis_cell_seconds(d.reset_after_ns));
        break;
      case ReplyKind::kDecision:
        w.array(5);
        w.integer(d.allowed ? 1 : 0);
        w.integer(d.limit);
        w.integer(d.remaining);
        w.integer(ceil_ms(d.retry_after_ns));
        w.integer(ceil_ms(d.reset_after_ns));
        break;
      case ReplyKind::kAcquire: {
        const AcquireResult& a = op.acquire;
        w.array(5);
        w.integer(a.granted ? 1 : 0);
        if (a.granted) {
          char hex[16];
          hex16(a.lease_id, hex);
          w.bulk(std::string_view(hex, 16));
        } else {
          w.null();
        }
        w.integer(a.held);
        w.integer(op.spec.a);
        w.integer(a.granted ? -1 : ceil_ms(a.retry_after_ns));
        break;
      }
      case ReplyKind::kInteger:
      case ReplyKind::kLeaseCount:
        w.integer(op.value + (extra.empty() ? 0 : extra[si]));
        break;
    }
  }
  slots_.clear();
  local_.clear();
  groups_.clear();
  addends_.clear();
  forward_policies_.clear();
}

const LimitSpec* Session::policy_of(const std::vector<std::string_view>& args) {
  return policy_for(args, policies());
}

// Never a bare failure nobody thought about: the policy chose, and the reply says so
// (a sixth element, "fail_open" or "fail_closed", after the usual five).
void Session::unavailable(RespWriter& w, const LimitSpec* policy, const std::string& error) {
  const FailMode mode = policy ? policy->on_unavailable : FailMode::kError;
  if (mode == FailMode::kError) {
    svc_.counters.unavailable.fetch_add(1, std::memory_order_relaxed);
    w.error(error);
    return;
  }
  const bool open = mode == FailMode::kOpen;
  (open ? svc_.counters.fail_open : svc_.counters.fail_closed)
      .fetch_add(1, std::memory_order_relaxed);
  const int64_t retry_ms = open ? (policy->kind == Kind::kConcurrency ? -1 : 0) : 1000;
  w.array(6);
  w.integer(open ? 1 : 0);
  if (policy->kind == Kind::kConcurrency) {  // FG.ACQUIRE: no lease to renew or release
    w.null();
    w.integer(0);
    w.integer(policy->a);
  } else {
    w.integer(policy->a);
    w.integer(open ? policy->a : 0);
  }
  w.integer(retry_ms);
  if (policy->kind != Kind::kConcurrency) w.integer(0);
  w.bulk(open ? "fail_open" : "fail_closed");
}

}  // namespace fg
