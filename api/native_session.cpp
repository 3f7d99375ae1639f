// NativeSession: frames in, ops to the shards, one answer frame per request frame.
#include "native_session.hpp"

#include <algorithm>
#include <deque>

#include "commands.hpp"
#include "errors.hpp"
#include "forward.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "native.pb.h"
#include "native_wire.hpp"
#include "request_metrics.hpp"

namespace fg {

namespace pb = floodgate::native;

namespace {

constexpr int64_t kMaxReserveMs = 60'000;  // a reservation holds at most a minute

uint32_t read_be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

[[maybe_unused]] void append_frame(std::string& out, const pb::ServerFrame& f) {
  const size_t n = f.ByteSizeLong();
  const size_t at = out.size();
  out.resize(at + 4 + n);
  auto* p = reinterpret_cast<unsigned char*>(out.data() + at);
  p[0] = static_cast<unsigned char>(n >> 24);
  p[1] = static_cast<unsigned char>(n >> 16);
  p[2] = static_cast<unsigned char>(n >> 8);
  p[3] = static_cast<unsigned char>(n);
  f.SerializeWithCachedSizesToArray(p + 4);
}

void fail(wire::ResultView& r, pb::Code code, std::string_view error) {
  r.code = code;
  r.error = error;
}

bool is_rate_op(int op) { return op == pb::TAKE || op == pb::PEEK || op == pb::RESERVE; }

}  // namespace

struct NativeSession::Frame {
  std::string bytes;  // the frame as received: requests' keys point into it
  wire::ClientFrameView in;
  std::vector<wire::ResultView> results;
  std::vector<int32_t> op_of;  // per result: its op in the batch, or -1 if answered
  std::vector<uint8_t> op;     // per result: the request's op, for metrics
  int64_t arrived_ns = 0;
  std::deque<std::string> arena;  // texts and names made here (errors, BOUND holders)
  std::string_view keep(std::string s) { return arena.emplace_back(std::move(s)); }
};

NativeSession::NativeSession(Services& svc, std::shared_ptr<ClientInfo> client)
    : svc_(svc), client_(std::move(client)), authenticated_(svc.settings.requirepass.empty()) {}

NativeSession::~NativeSession() {
  // Leases this connection took with `bound` go back now.
  if (client_) release_bound_leases(svc_, client_->id);
}

NativeProcessResult NativeSession::process(const char* data, size_t len, Batch& batch) {
  NativeProcessResult r;
  batch_ = &batch;
  if (svc_.routing && svc_.routing->version() != routing_version_) {
    routing_version_ = svc_.routing->version();
    routing_ = svc_.routing->get();
  }
  policies_ = svc_.policies->snapshot();
  const size_t ops_before = batch.ops.size();
  const size_t max_requests = svc_.settings.max_batch_commands * 4;
  size_t requests = 0;
  used_frames_ = 0;
  while (len - r.consumed >= 4 && !r.close) {
    const uint32_t n = read_be32(data + r.consumed);
    if (n > kNativeMaxFrame) {
      svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      wire::ServerFrameWriter w(out_, kNativeVersion);
      wire::ResultView e;
      fail(e, pb::ERR, "ERR Protocol error: frame larger than 16 MiB");
      w.add(e);
      w.finish();
      r.close = true;
      r.consumed = len;
      break;
    }
    if (len - r.consumed - 4 < n) break;  // the rest of the frame is still on its way
    if (used_frames_ > 0 && requests >= max_requests) break;
    if (used_frames_ == frames_.size()) frames_.push_back(std::make_unique<Frame>());
    Frame& f = *frames_[used_frames_++];
    f.results.clear();
    f.op_of.clear();
    f.arena.clear();
    f.bytes.assign(data + r.consumed + 4, n);
    if (!wire::decode_client_frame(f.bytes, f.in)) {
      svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      f.in.requests.clear();
      fail(f.results.emplace_back(), pb::ERR, "ERR Protocol error: malformed frame");
      f.op_of.push_back(-1);
      r.close = true;
      r.consumed = len;
      break;
    }
    r.consumed += 4 + n;
    serve(f);
    requests += f.in.requests.size();
  }
  if (requests > 0) {
    svc_.counters.commands.fetch_add(requests, std::memory_order_relaxed);
    client_->last_active_ms.store(svc_.clock->now_ns() / 1'000'000, std::memory_order_relaxed);
    client_->last_cmd.store("native", std::memory_order_relaxed);
  }
  r.submitted = batch.ops.size() > ops_before;
  if (!r.submitted) complete(batch);
  batch_ = nullptr;
  return r;
}

void NativeSession::serve(Frame& f) {
  const wire::ClientFrameView& in = f.in;
  bool bad_password = false;
  if (in.has_hello) {
    pb::Hello h;
    if (h.ParseFromArray(in.hello.data(), static_cast<int>(in.hello.size()))) {
      if (!svc_.settings.requirepass.empty() && !h.password().empty()) {
        authenticated_ = h.password() == svc_.settings.requirepass;
        bad_password = !authenticated_;
      }
      if (!h.client_name().empty()) svc_.clients->set_lib(*client_, true, h.client_name());
      watch_topology_ = h.watch_topology();
      if (watch_topology_ && routing_) pushed_epoch_ = routing_->epoch;
    }
  }
  f.results.resize(in.requests.size());
  f.op_of.assign(in.requests.size(), -1);
  f.op.assign(in.requests.size(), 0);
  f.arrived_ns = steady_ns();
  wire::RequestView req;
  for (size_t i = 0; i < in.requests.size(); ++i) {
    wire::ResultView& res = f.results[i];
    if (!wire::decode_request(in.requests[i], req)) {
      fail(res, pb::ERR, "ERR Protocol error: malformed request");
      continue;
    }
    f.op[i] = static_cast<uint8_t>(req.op >= 0 && req.op <= pb::PING ? req.op : 0);
    if (!authenticated_ && req.op != pb::PING) {
      fail(res, pb::NOAUTH, bad_password ? err::kWrongPass : err::kNoAuth);
      continue;
    }
    request(req, f, i);
  }
}

// Resolves a request's limit: inline, or what PolicySet::lookup says for its key (a
// per-key override, the named policy, or the key's mapped pattern).
static bool resolve_limit(const wire::RequestView& req, const PolicySet& policies, LimitSpec& spec,
                          std::string& error) {
  if (!req.policy.empty() || req.kind == pb::KIND_NONE) {
    const LimitSpec* p = policies.lookup(req.key, req.policy, error);
    if (!p) return false;
    spec = *p;
    return true;
  }
  if (req.kind < pb::KIND_NONE || req.kind > pb::CONCURRENCY) {
    error = "ERR unknown limiter kind";
    return false;
  }
  if (req.period_ms <= 0 || req.period_ms > kMaxPeriodNs / kNsPerMs) {
    error = req.period_ms <= 0 ? err::kNotPositive : err::kNotInteger;
    return false;
  }
  spec = LimitSpec::make(static_cast<Kind>(req.kind), req.a, req.b, req.period_ms * kNsPerMs);
  const std::string why = validate(spec);
  if (why.empty()) return true;
  error = "ERR " + why;
  return false;
}

void NativeSession::request(const wire::RequestView& req, Frame& f, size_t index) {
  wire::ResultView& res = f.results[index];
  const int op = req.op;
  switch (op) {
    case pb::PING:
      return;
    case pb::TOPOLOGY: {
      pb::Topology t;
      fill_topology(t);
      res.has_topology = true;
      res.topology = f.keep(t.SerializeAsString());
      return;
    }
    case pb::HEARTBEAT:
    case pb::RELEASE_ALL: {
      if (req.holder.empty()) return fail(res, pb::ERR, "ERR a holder is required");
      if (op == pb::HEARTBEAT && (req.ttl_ms <= 0 || req.ttl_ms > kMaxPeriodNs / kNsPerMs)) {
        return fail(res, pb::ERR, err::kNotPositive);
      }
      ShardOp& o = batch_->ops.emplace_back();
      o.code = op == pb::HEARTBEAT ? OpCode::kHeartbeat : OpCode::kReleaseHolder;
      o.shard = kAllShards;
      o.holder = req.holder;
      o.ttl_ns = req.ttl_ms * kNsPerMs;
      f.op_of[index] = static_cast<int32_t>(batch_->ops.size() - 1);
      return;
    }
    default:
      break;
  }
  if (op < pb::TAKE || op > pb::CANCEL) {
    return fail(res, pb::UNSUPPORTED, f.keep("ERR unknown op " + std::to_string(op)));
  }
  // Keyed requests.
  if (req.key.size() > kMaxKeyLen) return fail(res, pb::ERR, err::kKeyTooLong);
  LimitSpec spec;
  int64_t cost = req.has_cost ? req.cost : 1;
  uint64_t lease = req.lease;
  int64_t ttl_ns = 0;
  std::string_view holder;
  std::string error;
  if (is_rate_op(op) || op == pb::ACQUIRE) {
    if (!resolve_limit(req, *policies_, spec, error)) {
      return fail(res, pb::ERR, f.keep(std::move(error)));
    }
    if (is_rate_op(op) && spec.kind == Kind::kConcurrency) {
      return fail(res, pb::ERR, err::kConcurrencyPolicy);
    }
    if (op == pb::ACQUIRE && spec.kind != Kind::kConcurrency) {
      return fail(res, pb::ERR, err::kNotConcurrencyPolicy);
    }
  }
  if (is_rate_op(op) && (cost < 0 || cost > kMaxCount)) {
    return fail(res, pb::ERR, err::kNotInteger);
  }
  if (op == pb::RESERVE) {
    if (req.ttl_ms <= 0 || req.ttl_ms > kMaxReserveMs) {
      return fail(res, pb::ERR, "ERR a reservation's ttl_ms must be between 1 and 60000");
    }
    ttl_ns = req.ttl_ms * kNsPerMs;
  }
  if (op == pb::RENEW) {
    if (req.ttl_ms <= 0 || req.ttl_ms > kMaxPeriodNs / kNsPerMs) {
      return fail(res, pb::ERR, err::kNotPositive);
    }
    ttl_ns = req.ttl_ms * kNsPerMs;
  }
  if ((op == pb::RENEW || op == pb::RELEASE || op == pb::COMMIT || op == pb::CANCEL) &&
      lease == 0) {
    return fail(res, pb::ERR, err::kBadLease);
  }
  if (op == pb::ACQUIRE) {
    ttl_ns = spec.c;
    if (req.bound && !req.holder.empty()) return fail(res, pb::ERR, err::kSyntax);
    if (req.bound) {
      if (!svc_.bound) return fail(res, pb::ERR, "ERR bound leases are not available here");
      holder = f.arena.emplace_back(svc_.bound->bind(client_->id, ttl_ns / kNsPerMs));
    } else {
      holder = req.holder;
    }
  }
  const uint32_t slot = routing_ ? key_slot(req.key) : 0;
  if (routing_) {
    // The policy's on_unavailable applies to the limiter requests that name one.
    const LimitSpec* policy = nullptr;
    if ((is_rate_op(op) || op == pb::ACQUIRE) && !req.policy.empty()) policy = &spec;
    const Routing& rt = *routing_;
    const uint16_t owner = rt.owner[slot];
    if (owner == kNoOwner || rt.epoch == 0 || !rt.can_serve()) {
      return unavailable(res, policy, pb::CLUSTERDOWN,
                         rt.can_serve() ? err::kClusterDown : err::kNoQuorum);
    }
    if (static_cast<int>(owner) == rt.self_index) {
      if (!rt.serving.test(slot)) return fail(res, pb::TRYAGAIN, err::kSlotMoving);
    } else {
      const RouteNode& node = rt.nodes[owner];
      if (node.state == MemberState::kDead || node.state == MemberState::kLeft) {
        return unavailable(res, policy, pb::TRYAGAIN,
                           f.keep("TRYAGAIN the key's owner (" + node.id +
                                  ") is down; a replica takes over shortly"));
      }
      svc_.counters.moved.fetch_add(1, std::memory_order_relaxed);
      res.code = pb::MOVED;
      res.slot = slot;
      res.node = f.keep(node.id);
      res.error = f.keep("MOVED " + std::to_string(slot) + " " + node.resp_host + ":" +
                         std::to_string(node.native_port));
      return;
    }
  }
  ShardOp& o = batch_->ops.emplace_back();
  switch (op) {
    case pb::TAKE:
      o.code = OpCode::kTake;
      break;
    case pb::PEEK:
      o.code = OpCode::kPeek;
      break;
    case pb::RESERVE:
      o.code = OpCode::kReserve;
      break;
    case pb::RESET:
      o.code = OpCode::kReset;
      break;
    case pb::ACQUIRE:
      o.code = OpCode::kAcquire;
      break;
    case pb::RENEW:
      o.code = OpCode::kRenew;
      break;
    case pb::RELEASE:
      o.code = OpCode::kRelease;
      break;
    case pb::COUNT:
      o.code = OpCode::kCount;
      break;
    case pb::COMMIT:
      o.code = OpCode::kCommit;
      break;
    default:
      o.code = OpCode::kCancel;
      break;
  }
  o.key = req.key;
  o.shard = svc_.shards->shard_of(o.key);
  o.slot = static_cast<uint16_t>(slot);
  o.spec = spec;
  o.cost = cost;
  o.ttl_ns = ttl_ns;
  o.lease_id = lease;
  o.holder = holder;
  f.op_of[index] = static_cast<int32_t>(batch_->ops.size() - 1);
}

// The policy chose what to answer when no copy of the key's state can be reached.
void NativeSession::unavailable(wire::ResultView& res, const LimitSpec* policy, int code,
                                std::string_view error) {
  const FailMode mode = policy ? policy->on_unavailable : FailMode::kError;
  if (mode == FailMode::kError) {
    svc_.counters.unavailable.fetch_add(1, std::memory_order_relaxed);
    return fail(res, static_cast<pb::Code>(code), error);
  }
  const bool open = mode == FailMode::kOpen;
  (open ? svc_.counters.fail_open : svc_.counters.fail_closed)
      .fetch_add(1, std::memory_order_relaxed);
  res.allowed = open;
  res.limit = policy->a;
  res.remaining = open && policy->kind != Kind::kConcurrency ? policy->a : 0;
  res.retry_after_ms = open ? -1 : 1000;
  res.unavailable = open ? "fail_open" : "fail_closed";
}

void NativeSession::fill_topology(pb::Topology& t) const {
  t.set_cluster(routing_ != nullptr);
  if (!routing_) {
    pb::Node* n = t.add_nodes();
    n->set_id(svc_.settings.run_id);
    n->set_host(svc_.settings.bind.substr(0, svc_.settings.bind.find(' ')));
    n->set_port(static_cast<uint32_t>(svc_.settings.native_port));
    n->set_resp_port(static_cast<uint32_t>(svc_.settings.port));
    n->set_state("alive");
    n->set_in_table(true);
    pb::SlotRange* r = t.add_ranges();
    r->set_first(0);
    r->set_last(kSlots - 1);
    r->set_owner(0);
    t.set_quorum(true);
    return;
  }
  const Routing& rt = *routing_;
  t.set_epoch(rt.epoch);
  t.set_quorum(rt.quorum);
  for (const RouteNode& node : rt.nodes) {
    pb::Node* n = t.add_nodes();
    n->set_id(node.id);
    n->set_host(node.resp_host);
    n->set_port(static_cast<uint32_t>(node.native_port));
    n->set_resp_port(static_cast<uint32_t>(node.resp_port));
    n->set_state(std::string(state_name(node.state)));
    n->set_in_table(node.in_table);
  }
  size_t members = 0;
  for (const RouteNode& node : rt.nodes) members += node.in_table;
  for (const SlotRange& range : rt.ranges) {
    if (range.owner == kNoOwner) continue;
    pb::SlotRange* r = t.add_ranges();
    r->set_first(range.first);
    r->set_last(range.last);
    r->set_owner(range.owner);
    // The nodes after the owner in table order keep the copies (as CLUSTER SLOTS says).
    for (size_t k = 1; k < std::min(rt.replicas, members); ++k) {
      r->add_replicas(static_cast<uint32_t>((range.owner + k) % members));
    }
  }
}

bool NativeSession::push_topology_if_changed() {
  if (!watch_topology_ || !svc_.routing) return false;
  if (svc_.routing->version() != routing_version_) {
    routing_version_ = svc_.routing->version();
    routing_ = svc_.routing->get();
  }
  if (!routing_ || routing_->epoch == pushed_epoch_) return false;
  pushed_epoch_ = routing_->epoch;
  pb::ServerFrame f;
  f.set_version(kNativeVersion);
  f.set_push(true);
  fill_topology(*f.mutable_topology());
  append_frame(out_, f);
  return true;
}

void NativeSession::finish(Frame& f, const Batch* batch) {
  wire::ServerFrameWriter w(out_, kNativeVersion);
  RequestMetrics& metrics = RequestMetrics::get();
  const int64_t latency_us = (steady_ns() - f.arrived_ns) / 1000;
  const int64_t now_s = svc_.clock->now_ns() / kNsPerSec;
  for (size_t i = 0; i < f.results.size(); ++i) {
    wire::ResultView& res = f.results[i];
    const uint16_t cmd =
        static_cast<uint16_t>(kNativeCommandBase + (i < f.op.size() ? f.op[i] : 0));
    RequestResult r = res.code == pb::OK ? RequestResult::kOk : RequestResult::kError;
    if (f.op_of[i] >= 0) {
      const ShardOp& op = batch->ops[static_cast<size_t>(f.op_of[i])];
      fill_result(op, res);
      const bool decides =
          op.code == OpCode::kTake || op.code == OpCode::kReserve || op.code == OpCode::kAcquire;
      if (op.status != OpStatus::kOk) {
        r = RequestResult::kError;
      } else if (decides) {
        r = res.allowed ? RequestResult::kAllowed : RequestResult::kDenied;
        metrics.decision(op.spec.policy, res.allowed);
        if (!res.allowed) metrics.denied(op.key, now_s);
      }
    }
    metrics.record(cmd, r, latency_us);
    w.add(res);
  }
  w.finish();
}

void NativeSession::fill_result(const ShardOp& op, wire::ResultView& res) {
  switch (op.status) {
    case OpStatus::kOk:
      break;
    case OpStatus::kWrongType:
      return fail(res, pb::WRONGTYPE, err::kWrongType);
    case OpStatus::kKeyLimit:
      return fail(res, pb::OOM, err::kKeyLimit);
    case OpStatus::kNotOwner:
      return fail(res, pb::TRYAGAIN, err::kSlotMoving);
    case OpStatus::kNotReplicated:
      return fail(res, pb::NOTREPLICATED, err::kNotReplicated);
  }
  switch (op.code) {
    case OpCode::kTake:
    case OpCode::kPeek:
    case OpCode::kReserve: {
      const Decision& d = op.decision;
      res.allowed = d.allowed;
      res.limit = d.limit;
      res.remaining = d.remaining;
      res.retry_after_ms = ceil_ms(d.retry_after_ns);
      res.reset_after_ms = ceil_ms(d.reset_after_ns);
      if (op.code == OpCode::kReserve) res.lease = op.lease_id;
      break;
    }
    case OpCode::kAcquire: {
      const AcquireResult& a = op.acquire;
      res.allowed = a.granted;
      res.lease = a.granted ? a.lease_id : 0;
      res.value = a.held;
      res.limit = op.spec.a;
      res.retry_after_ms = a.granted ? -1 : ceil_ms(a.retry_after_ns);
      break;
    }
    default:
      res.value = op.value;
      break;
  }
}

void NativeSession::complete(const Batch& batch) {
  for (size_t i = 0; i < used_frames_; ++i) finish(*frames_[i], &batch);
  used_frames_ = 0;
}

}  // namespace fg
