// forward.proto <-> Request / Outcome.
#include "forward_codec.hpp"

#include <algorithm>

#include "acl.hpp"
#include "errors.hpp"

namespace fg {

void encode_forwarded(const Request& r, std::string_view holder, forward::ForwardedRequest& out) {
  out.set_verb(static_cast<uint32_t>(r.verb));
  if (!r.key.empty()) out.set_key(r.key.data(), r.key.size());
  if (r.spec.kind != Kind::kNone || r.spec.sync) {
    forward::Spec* s = out.mutable_spec();
    s->set_kind(static_cast<uint32_t>(r.spec.kind));
    s->set_a(r.spec.a);
    s->set_b(r.spec.b);
    s->set_c_ns(r.spec.c);
    s->set_sync(r.spec.sync);
    s->set_on_unavailable(static_cast<uint32_t>(r.spec.on_unavailable));
    s->set_count_denied(r.spec.count_denied);
  }
  out.set_cost(r.cost);
  out.set_ttl_ms(r.ttl_ms);
  if (r.wait_ms > 0) out.set_wait_ms(r.wait_ms);
  out.set_lease(r.lease);
  if (!holder.empty()) out.set_holder(holder.data(), holder.size());
  out.set_txn(r.txn);
  if (r.verb == Verb::kData) {
    out.set_data(static_cast<uint32_t>(r.data));
    out.set_resp3(r.resp3);
    if (r.waited) out.set_waited(true);
    for (std::string_view w : *r.args) out.add_args(w.data(), w.size());
  }
  if (const AclUser* who = r.asker ? r.asker : r.user) {
    out.set_user(who->name());
    if (r.verb != Verb::kData) out.set_command(r.command.data(), r.command.size());
  } else {
    out.set_by_node(true);
  }
}

Result<Request> decode_forwarded(const forward::ForwardedRequest& in,
                                 std::deque<std::vector<std::string_view>>& argvs) {
  if (in.verb() > static_cast<uint32_t>(Verb::kAdjust)) return Error{err::unknown_op(in.verb())};
  Request r;
  r.txn = in.txn();  // (the sender's number: RequestJob gives it one of its flight's)
  if (in.verb() == static_cast<uint32_t>(Verb::kData)) {
    // The sender's table decided the words are this command's, with its keys where the
    // command has them; what the shard runs is checked there, as from a client.
    const uint32_t step =
        in.data() <= kLastDataCmd ? data_cmd_info(static_cast<DataCmd>(in.data())).step : 0;
    if (in.data() == 0 || step == 0 || in.args_size() < 2 ||
        (step == 2 && in.args_size() % 2 == 0)) {
      return Error{err::kMalformedRequest};
    }
    auto& words = argvs.emplace_back();
    for (const std::string& w : in.args()) words.emplace_back(w);
    r.verb = Verb::kData;
    r.data = static_cast<DataCmd>(in.data());
    r.resp3 = in.resp3();
    r.waited = in.waited();
    r.spec.sync = in.has_spec() && in.spec().sync();
    r.args = &words;
    r.key = data_route_key(r.data, words);
    return r;
  }
  r.verb = static_cast<Verb>(in.verb());
  r.key = in.key();
  r.cost = in.cost();
  r.ttl_ms = in.ttl_ms();
  r.wait_ms = std::clamp<int64_t>(in.wait_ms(), 0, kMaxWaitMs);
  r.lease = in.lease();
  r.holder = in.holder();
  if (in.has_spec()) {
    const forward::Spec& s = in.spec();
    if (s.on_unavailable() > static_cast<uint32_t>(FailMode::kClosed)) {
      return Error{err::kUnknownKind};
    }
    const auto kind =
        static_cast<Kind>(s.kind() <= static_cast<uint32_t>(kLastKind) ? s.kind() : 0);
    r.spec = LimitSpec::make(is_limiter(kind) ? kind : Kind::kNone, s.a(), s.b(), s.c_ns());
    r.spec.sync = s.sync();
    r.spec.on_unavailable = static_cast<FailMode>(s.on_unavailable());
    r.spec.count_denied = s.count_denied();
    if (const char* why = validate(r.spec)) return Error{why};
  }
  return r;
}

void encode_outcome(const Outcome& o, Verb verb, forward::ForwardOutcome& out) {
  out.set_code(static_cast<uint32_t>(o.code));
  if (!o.ok()) {
    out.set_error(o.error.data(), o.error.size());
    if (o.code == Code::kMoved) {
      out.set_slot(o.slot);
      out.set_node(o.node.data(), o.node.size());
    }
    return;
  }
  if (verb == Verb::kData) {
    if (!o.reply) return;
    for (const ReplyItem& i : o.reply->items) {
      forward::ReplyItem* m = out.add_reply();
      m->set_type(static_cast<uint32_t>(i.type));
      m->set_n(i.n);
      if (!i.s.empty()) m->set_s(i.s);
    }
    return;
  }
  out.set_unavailable(static_cast<uint32_t>(o.unavailable));
  if (verb == Verb::kAcquire) {
    out.set_allowed(o.acquire.granted);
    out.set_lease(o.acquire.lease_id);
    out.set_value(o.acquire.held);
    out.set_retry_after_ns(o.acquire.retry_after_ns);
    out.set_limit(o.limit);
  } else if (answers_decision(verb)) {
    out.set_allowed(o.decision.allowed);
    out.set_limit(o.decision.limit);
    out.set_remaining(o.decision.remaining);
    out.set_retry_after_ns(o.decision.retry_after_ns);
    out.set_reset_after_ns(o.decision.reset_after_ns);
    if (o.decision.wait_ns > 0) out.set_wait_ns(o.decision.wait_ns);
    out.set_lease(o.ticket);
  } else {
    out.set_value(o.value);
  }
}

void decode_outcome(const forward::ForwardOutcome& in, Verb verb, Outcome& out,
                    std::deque<DataReply>& replies) {
  out.code = in.code() <= static_cast<uint32_t>(Code::kKeyLimit) ? static_cast<Code>(in.code())
                                                                 : Code::kError;
  if (!out.ok()) {
    out.error = in.error();
    out.slot = in.slot();
    out.node = in.node();
    return;
  }
  if (verb == Verb::kData) {
    DataReply& r = replies.emplace_back();
    for (const forward::ReplyItem& m : in.reply()) {
      const auto type = m.type() <= static_cast<uint32_t>(ReplyItem::kLastType)
                            ? static_cast<ReplyItem::Type>(m.type())
                            : ReplyItem::Type::kNull;
      r.items.push_back(ReplyItem{type, m.n(), m.s()});
    }
    // Whatever a peer sent, the door writes whole values: every array's elements are there.
    size_t i = 0, need = 1;
    while (need > 0 && i < r.items.size()) {
      const ReplyItem& item = r.items[i++];
      --need;
      if (ReplyItem::children(item.type, 1) > 0) {
        if (item.n < 0 || static_cast<size_t>(item.n) > r.items.size()) break;
        need += static_cast<size_t>(ReplyItem::children(item.type, item.n));
      }
    }
    if (need != 0 || i != r.items.size()) {
      out.code = Code::kError;
      out.error = err::kMalformedReply;
      return;
    }
    out.reply = &r;
    return;
  }
  out.unavailable = in.unavailable() <= static_cast<uint32_t>(FailMode::kClosed)
                        ? static_cast<FailMode>(in.unavailable())
                        : FailMode::kError;
  if (verb == Verb::kAcquire) {
    out.acquire.granted = in.allowed();
    out.acquire.lease_id = in.lease();
    out.acquire.held = in.value();
    out.acquire.retry_after_ns = in.retry_after_ns();
    out.limit = in.limit();
  } else if (answers_decision(verb)) {
    out.decision.allowed = in.allowed();
    out.decision.limit = in.limit();
    out.decision.remaining = in.remaining();
    out.decision.retry_after_ns = in.retry_after_ns();
    out.decision.reset_after_ns = in.reset_after_ns();
    out.decision.wait_ns = std::clamp<int64_t>(in.wait_ns(), 0, kMaxWaitMs * kNsPerMs);
    out.ticket = in.lease();
  } else {
    out.value = in.value();
  }
}

}  // namespace fg
