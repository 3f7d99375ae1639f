// The native door: frames in, requests to the core, one answer frame per request frame.
#include "native_session.hpp"

#include <algorithm>
#include <deque>

#include "calendar.hpp"
#include "command_table.hpp"
#include "errors.hpp"
#include "length_prefix.hpp"
#include "native.pb.h"
#include "native_wire.hpp"
#include "request_metrics.hpp"

namespace fg {

namespace pb = floodgate::native;

namespace {

void fail(wire::ResultView& r, pb::Code code, std::string_view error) {
  r.code = code;
  r.error = error;
}

pb::Code code_of(Code c) {
  switch (c) {
    case Code::kOk:
      return pb::OK;
    case Code::kError:
      return pb::ERR;
    case Code::kWrongType:
      return pb::WRONGTYPE;
    case Code::kMoved:
      return pb::MOVED;
    case Code::kTryAgain:
      return pb::TRYAGAIN;
    case Code::kClusterDown:
      return pb::CLUSTERDOWN;
    case Code::kNotReplicated:
      return pb::NOTREPLICATED;
    case Code::kKeyLimit:
      return pb::OOM;
  }
  return pb::ERR;
}

}  // namespace

void fill_result(const Outcome& o, Verb verb, wire::ResultView& res) {
  res.code = code_of(o.code);
  if (!o.ok()) {
    res.error = o.error;
    if (o.code == Code::kMoved) {
      res.slot = o.slot;
      res.node = o.node;
    }
    return;
  }
  if (o.unavailable != FailMode::kError) {
    res.unavailable = o.unavailable == FailMode::kOpen ? "fail_open" : "fail_closed";
  }
  if (verb == Verb::kAcquire) {
    const AcquireResult& a = o.acquire;
    res.allowed = a.granted;
    res.lease = a.granted ? a.lease_id : 0;
    res.value = a.held;
    res.limit = o.limit;
    res.retry_after_ms = a.granted ? -1 : ceil_ms(a.retry_after_ns);
  } else if (answers_decision(verb)) {
    const Decision& d = o.decision;
    res.allowed = d.allowed;
    res.limit = d.limit;
    res.remaining = d.remaining;
    res.retry_after_ms = ceil_ms(d.retry_after_ns);
    res.reset_after_ms = ceil_ms(d.reset_after_ns);
    res.lease = o.ticket;
  } else {
    res.value = o.value;
  }
}

struct NativeSession::Frame {
  std::string bytes;  // the frame as received: requests' keys point into it
  wire::ClientFrameView in;
  std::vector<wire::RequestView> requests;  // decoded
  std::vector<bool> decoded;
  // Per request: answered by the door (results), or by the core (outcomes, pending).
  std::vector<wire::ResultView> results;
  std::vector<Outcome> outcomes;
  std::vector<Pending> pending;
  std::vector<int8_t> verb;  // the core's verb, or -1: answered by the door
  std::vector<uint8_t> op;   // the request's op, for metrics
  int64_t arrived_ns = 0;
  std::vector<std::pair<size_t, Waiter>> waits;  // takes that may wait, by request index
  std::deque<std::string> arena;                 // texts made here
  std::string_view keep(std::string s) { return arena.emplace_back(std::move(s)); }
};

NativeSession::NativeSession(Services& svc, std::shared_ptr<ClientInfo> client)
    : svc_(svc), client_(std::move(client)), core_(svc) {
  if (svc.clients) svc.clients->set_lib(*client_, true, "floodgate-native");  // CLIENT LIST
  acl_.start(svc.acl);
  for (Door* d : {&move_door_, &forward_door_}) {
    d->native_ports = true;
    d->client_id = client_->id;
  }
  move_door_.mode = RouteMode::kMove;
  forward_door_.mode = RouteMode::kForward;
}

NativeSession::~NativeSession() = default;

size_t NativeSession::max_input(size_t) { return wire::kMaxFrameBytes + 64 * 1024; }

int64_t NativeSession::held_bytes() const {
  size_t n = 0;
  for (size_t i = 0; i < used_frames_; ++i) n += frames_[i]->bytes.capacity();
  return static_cast<int64_t>(n + held_.capacity());  // (with frames held for a waiting take)
}

Door& NativeSession::door(bool forward, Frame& f) {
  Door& d = forward ? forward_door_ : move_door_;
  d.routing = routing_.get();
  d.texts = &f.arena;
  return d;
}

ProcessResult NativeSession::process(const char* data, size_t len, Flight& flight) {
  ProcessResult r;
  if (svc_.routing && svc_.routing->version() != routing_version_) {
    routing_version_ = svc_.routing->version();
    routing_ = svc_.routing->get();
  }
  if (held_due_ns_ != 0) {  // frames held for a waiting take: sent when it is due
    const int64_t now = steady_ns();
    if (now < held_due_ns_) {
      r.retry_ms = std::max<int64_t>(1, (held_due_ns_ - now + 999'999) / 1'000'000);
    } else {
      out_ += held_;
      release_held();
    }
    return r;
  }
  svc_.policies->refresh(policies_, policies_version_);
  if (!acl_.refresh()) {  // its user was removed or disabled: closed, as Redis does
    r.close = true;
    return r;
  }
  const size_t max_requests = svc_.settings.max_batch_commands * 4;
  size_t requests = 0;
  int64_t last_arrived_ns = 0;  // (of the last frame served)
  bool submitted = false;
  used_frames_ = 0;
  while (len - r.consumed >= 4 && !r.close) {
    const uint32_t n = read_length(data + r.consumed);
    const bool too_large = n > wire::kMaxFrameBytes;
    if (!too_large && len - r.consumed - 4 < n) break;  // the rest is still on its way
    if (used_frames_ > 0 && requests >= max_requests) break;
    if (used_frames_ == frames_.size()) frames_.push_back(std::make_unique<Frame>());
    Frame& f = *frames_[used_frames_++];
    f.results.clear();
    f.verb.clear();
    f.waits.clear();
    f.arena.clear();
    if (too_large || !wire::decode_client_frame(f.bytes.assign(data + r.consumed + 4, n), f.in)) {
      // Answered after the frames before it, then the connection closes.
      svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      f.in.requests.clear();
      fail(f.results.emplace_back(), pb::ERR,
           too_large ? err::kFrameTooLarge : err::kMalformedFrame);
      f.verb.assign(1, -1);
      f.op.assign(1, 0);
      f.arrived_ns = steady_ns();
      r.close = true;
      r.consumed = len;
      break;
    }
    f.requests.resize(f.in.requests.size());
    f.decoded.assign(f.in.requests.size(), false);
    for (size_t i = 0; i < f.in.requests.size(); ++i) {
      f.decoded[i] = wire::decode_request(f.in.requests[i], f.requests[i]);
    }
    if (must_wait(f)) {  // its state is on its way here: take the frame up again shortly
      --used_frames_;
      r.stalled = true;
      break;
    }
    r.consumed += 4 + n;
    serve(f, flight);
    last_arrived_ns = f.arrived_ns;
    requests += f.in.requests.size();
    for (const Pending& p : f.pending) submitted |= p.waits();
  }
  if (requests > 0) {
    svc_.counters.commands.fetch_add(requests, std::memory_order_relaxed);
    client_->last_active_mono_ms.store(last_arrived_ns / 1'000'000, std::memory_order_relaxed);
    client_->last_cmd.store("native", std::memory_order_relaxed);
  }
  r.submitted = submitted;
  if (!submitted) complete(flight);
  return r;
}

bool NativeSession::must_wait(const Frame& f) const {
  if (!routing_) return false;
  for (size_t i = 0; i < f.requests.size(); ++i) {
    const NativeOp* op = f.decoded[i] ? find_native_op(f.requests[i].op) : nullptr;
    if (op && keyed(op->verb) && core_.must_wait(f.requests[i].key, routing_.get())) {
      return true;
    }
  }
  return false;
}

void NativeSession::serve(Frame& f, Flight& flight) {
  const wire::ClientFrameView& in = f.in;
  // A hello that cannot be taken as a whole is not taken at all: the frame's requests are
  // answered ERR with why.
  std::string_view bad_hello;
  bool bad_password = false;
  if (in.has_hello) {
    pb::Hello h;
    if (!h.ParseFromArray(in.hello.data(), static_cast<int>(in.hello.size()))) {
      bad_hello = err::kMalformedHello;
    } else if (!ClientRegistry::valid_name(h.client_name())) {
      bad_hello = err::kClientName;
    } else {
      if (!h.password().empty() || !h.user().empty()) {
        const std::string_view user = h.user().empty() ? "default" : std::string_view(h.user());
        auto u = acl_.verify(user, h.password());
        bad_password = !u;
        if (bad_password) {
          svc_.acl->refused(AclDenied::kAuth, "toplevel", "hello", user,
                            svc_.clients->describe(*client_, svc_.clock->now_ns() / 1'000'000));
        } else if (!svc_.clients->set_user(*client_, u->name(), u->account())) {
          bad_hello = err::kUserMaxClients;
        } else {
          acl_.adopt(std::move(u));
        }
      }
      if (!h.client_name().empty()) svc_.clients->set_lib(*client_, true, h.client_name());
      watch_topology_ = h.watch_topology();
      omit_retry_ = h.allowed_omits_retry();
      if (watch_topology_ && routing_) pushed_epoch_ = routing_->epoch;
    }
  }
  const size_t n = in.requests.size();
  f.results.assign(n, wire::ResultView{});
  f.outcomes.assign(n, Outcome{});
  f.pending.assign(n, Pending{});
  f.verb.assign(n, -1);
  f.op.assign(n, 0);
  f.arrived_ns = steady_ns();
  for (size_t i = 0; i < n; ++i) {
    wire::ResultView& res = f.results[i];
    if (!f.decoded[i]) {
      fail(res, pb::ERR, err::kMalformedRequest);
      continue;
    }
    const wire::RequestView& req = f.requests[i];
    f.op[i] = static_cast<uint8_t>(req.op >= 0 && req.op <= pb::ADJUST ? req.op : 0);
    if (!bad_hello.empty()) {
      fail(res, pb::ERR, bad_hello);
      continue;
    }
    if ((!acl_.authenticated() || bad_password) && req.op != pb::PING) {
      fail(res, pb::NOAUTH, bad_password ? err::kWrongPass : err::kNoAuth);
      continue;
    }
    if (!acl_.user()->unrestricted() && req.op != pb::PING && refused_by_acl(req, f, res)) continue;
    request(req, f, i, flight);
  }
}

bool NativeSession::refused_by_acl(const wire::RequestView& req, Frame& f, wire::ResultView& res) {
  const AclCatalog& catalog = svc_.acl->catalog();
  const NativeOp* op = find_native_op(req.op);  // (the registry's: native_ops())
  const int entry = op ? catalog.find(op->command) : -1;
  if (entry < 0) return false;  // (an op the node does not know is answered as such)
  std::vector<std::string_view>& words = acl_words_;  // (reused: no allocation per request)
  words.assign(1, catalog.at(entry).name);
  if (catalog.at(entry).first_key > 0) words.push_back(req.key);
  size_t pos = 0;
  const AclDenied d = acl_.user()->check(entry, words, &pos);
  if (d == AclDenied::kNone) return false;
  svc_.acl->refused(d, "toplevel", d == AclDenied::kKey ? req.key : catalog.at(entry).name,
                    acl_.name(),
                    svc_.clients->describe(*client_, svc_.clock->now_ns() / 1'000'000));
  fail(res, pb::NOPERM, f.keep(acl_denied_error(catalog, d, entry)));
  return true;
}

void NativeSession::request(const wire::RequestView& req, Frame& f, size_t index, Flight& flight) {
  wire::ResultView& res = f.results[index];
  if (req.op == pb::PING) return;
  if (req.op == pb::TOPOLOGY) {
    pb::Topology t;
    fill_topology(t);
    res.has_topology = true;
    res.topology = f.keep(t.SerializeAsString());
    return;
  }
  const NativeOp* op = find_native_op(req.op);
  if (!op) return fail(res, pb::UNSUPPORTED, f.keep(err::unknown_op(req.op)));
  const Verb verb = op->verb;
  Request r;
  r.verb = verb;
  r.metric = static_cast<uint16_t>(kNativeCommandBase + f.op[index]);
  r.key = req.key;
  r.cost = req.has_cost ? req.cost : 1;
  r.ttl_ms = req.ttl_ms;
  r.lease = req.lease;
  r.holder = req.holder;
  r.bound = req.bound;
  r.asker = acl_.user();
  r.command = op->command;
  if ((verb == Verb::kHeartbeat || verb == Verb::kReleaseAll) && !acl_.user()->unrestricted()) {
    r.user = acl_.user();  // (only the leases on keys this user may change)
  }
  r.here_only = !req.cluster_wide;  // older clients send it to every node themselves
  if (answers_decision(verb) || verb == Verb::kAcquire) {
    // The limit: inline, or what the policies say for this key (override, named, pattern).
    InlineLimit& last = last_limit_;
    if (req.policy.empty() && req.kind != pb::KIND_NONE && req.kind == last.kind &&
        req.a == last.a && req.b == last.b && req.period_ms == last.period_ms &&
        req.time_zone == last.time_zone) {
      r.spec = last.spec;  // the same inline limit as the last request's: made already
    } else {
      Result<LimitSpec> limit =
          !req.policy.empty() || req.kind == pb::KIND_NONE ? policies_->resolve(req.key, req.policy)
          : req.kind == pb::CALENDAR_WINDOW
              ? make_calendar(req.a, calendar_unit_name(static_cast<CalendarUnit>(req.b & 0xff)),
                              req.time_zone.empty() ? "UTC" : req.time_zone)
              : make_limit(static_cast<Kind>(req.kind), req.a, req.b, req.period_ms);
      if (!limit.ok()) return fail(res, pb::ERR, f.keep(limit.error()));
      r.spec = limit.value();
      if (req.policy.empty() && req.kind != pb::KIND_NONE) {
        last =
            InlineLimit{req.kind, req.a, req.b, req.period_ms, std::string(req.time_zone), r.spec};
      }
    }
  }
  if (req.wait_ms != 0) {
    if (verb != Verb::kTake || req.wait_ms < 0 || req.wait_ms > kMaxWaitMs) {
      return fail(res, pb::ERR, err::kWaitRange);
    }
    if (r.spec.kind != Kind::kTokenBucket && r.spec.kind != Kind::kGcra) {
      return fail(res, pb::ERR, err::kWaitKind);
    }
    r.wait_ms = req.wait_ms;
    f.waits.emplace_back(index, Waiter{std::string(req.key), r.spec, r.cost});
  }
  f.verb[index] = static_cast<int8_t>(verb);
  f.pending[index] = core_.submit(r, door(req.forward, f), flight, f.outcomes[index]);
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
    r->set_last(kSlotCount - 1);
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
  pb::Topology t;
  fill_topology(t);
  wire::ServerFrameWriter w(out_);
  w.push_topology(t.SerializeAsString());
  w.finish();
  return true;
}

void NativeSession::finish(Frame& f, Flight* flight) {
  const size_t frame_start = out_.size();
  bool waits = false;
  wire::ServerFrameWriter w(out_);
  RequestMetrics& metrics = *svc_.metrics;
  Door& d = door(false, f);
  d.latency_us = (steady_ns() - f.arrived_ns) / 1000;
  for (size_t i = 0; i < f.results.size(); ++i) {
    wire::ResultView& res = f.results[i];
    if (f.verb[i] < 0) {  // the door's own answer: count it here
      const uint16_t cmd = static_cast<uint16_t>(kNativeCommandBase + f.op[i]);
      metrics.record(cmd, res.code == pb::OK ? RequestResult::kOk : RequestResult::kError,
                     d.latency_us);
      w.add(res);
      continue;
    }
    if (flight && f.pending[i].waits()) core_.finish(f.pending[i], *flight, d, f.outcomes[i]);
    Outcome& o = f.outcomes[i];
    if (o.ok() && o.decision.wait_ns > 0) {  // (a TAKE with wait_ms: due later)
      auto it =
          std::find_if(f.waits.begin(), f.waits.end(), [i](const auto& x) { return x.first == i; });
      if (it != f.waits.end() && svc_.wait_room.enter(it->second.key, acl_.account())) {
        held_due_ns_ = std::max(held_due_ns_, steady_ns() + o.decision.wait_ns);
        held_waiters_.push_back(std::move(it->second));
        waits = true;
      } else {
        if (it != f.waits.end()) give_back_waits(svc_, {std::move(it->second)});
        o.code = Code::kError;
        o.error = err::kTooManyWaiters;
      }
    }
    fill_result(o, static_cast<Verb>(f.verb[i]), res);
    if (omit_retry_ && res.allowed && res.retry_after_ms == -1)
      res.retry_after_ms = 0;  // (left out)
    w.add(res);
  }
  w.finish();
  // A frame with a waiting take is answered when it is due, and the frames after it too.
  if (waits && held_from_ == SIZE_MAX) held_from_ = frame_start;
}

void NativeSession::complete(Flight& flight) {
  held_from_ = SIZE_MAX;
  for (size_t i = 0; i < used_frames_; ++i) finish(*frames_[i], &flight);
  used_frames_ = 0;
  hold();
}

void NativeSession::hold() {
  if (held_from_ == SIZE_MAX) return;
  held_.append(out_, held_from_);
  out_.resize(held_from_);
  held_from_ = SIZE_MAX;
}

bool NativeSession::wants_turn() const { return held_due_ns_ != 0 && steady_ns() >= held_due_ns_; }

void NativeSession::release_held() {
  for (const Waiter& w : held_waiters_) svc_.wait_room.leave(w.key, acl_.account());
  held_waiters_.clear();
  held_.clear();
  held_.shrink_to_fit();
  held_due_ns_ = 0;
}

void NativeSession::closing() {
  if (held_due_ns_ == 0) return;
  std::vector<Waiter> back = std::move(held_waiters_);
  held_waiters_.clear();
  release_held();
  give_back_waits(svc_, std::move(back));  // (never answered: their places go back)
}

}  // namespace fg
