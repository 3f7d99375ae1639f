// floodgate::Client's public calls: each builds a request and hands it to the machinery.
#include "floodgate/client.hpp"

#include <future>

#include "client_impl.hpp"

namespace floodgate {

namespace {

template <class T, class Start>
Result<T> block(Start&& start) {
  std::promise<Result<T>> p;
  auto f = p.get_future();
  start([&p](Result<T> r) { p.set_value(std::move(r)); });
  return f.get();
}

void decision_call(Client::Impl& impl, const Req& r, Callback<Decision> cb) {
  CallPtr c = impl.make(r);
  c->want = Call::Want::kDecision;
  c->on_decision = std::move(cb);
  impl.submit(std::move(c));
}

void value_call(Client::Impl& impl, const Req& r, Callback<int64_t> cb) {
  CallPtr c = impl.make(r);
  c->want = Call::Want::kValue;
  c->on_value = std::move(cb);
  impl.submit(std::move(c));
}

Callback<int64_t> as_bool(Callback<bool> cb) {
  return [cb = std::move(cb)](Result<int64_t> r) {
    if (!r.ok()) return cb(Result<bool>(r.status(), r.error()));
    cb(Result<bool>(r.value() != 0));
  };
}

}  // namespace

Client::Client(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}
Client::~Client() = default;

Client::Stats Client::stats() const { return impl_->stats(); }

#define FG_CHECK_THREAD(T)                                                             \
  if (impl_->on_io_thread())                                                           \
    return Result<T>(Status::kError,                                                   \
                     "a blocking call from a client callback would deadlock; use the " \
                     "callback form");

void Client::take(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb) {
  Req r = keyed_req(pb::TAKE, key, &limit);
  r.has_cost = true;
  r.cost = cost;
  decision_call(*impl_, r, std::move(cb));
}
void Client::take_waiting(std::string_view key, const Limit& limit, std::chrono::milliseconds wait,
                          int64_t cost, Callback<Decision> cb) {
  Req r = keyed_req(pb::TAKE, key, &limit);
  r.has_cost = true;
  r.cost = cost;
  r.wait_ms = wait.count();
  decision_call(*impl_, r, std::move(cb));
}
void Client::peek(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb) {
  Req r = keyed_req(pb::PEEK, key, &limit);
  r.has_cost = true;
  r.cost = cost;
  decision_call(*impl_, r, std::move(cb));
}
void Client::adjust(std::string_view key, const Limit& limit, int64_t delta,
                    Callback<Decision> cb) {
  Req r = keyed_req(pb::ADJUST, key, &limit);
  r.has_cost = true;
  r.cost = delta;
  decision_call(*impl_, r, std::move(cb));
}
void Client::reset(std::string_view key, Callback<bool> cb) {
  value_call(*impl_, keyed_req(pb::RESET, key), as_bool(std::move(cb)));
}
void Client::acquire(std::string_view key, const Limit& limit, std::string_view holder,
                     Callback<Lease> cb) {
  Req r = keyed_req(pb::ACQUIRE, key, &limit);
  r.holder = holder;
  impl_->submit(
      impl_->make(r, [cb = std::move(cb), k = std::string(key)](Status s, const std::string& e,
                                                                const fg::wire::ResultView* res) {
        if (s != Status::kOk || !res) return cb(Result<Lease>(s, e));
        Lease l;
        l.granted = res->allowed;
        l.key = k;
        l.id = res->lease;
        l.held = res->value;
        l.limit = res->limit;
        l.retry_after_ms = res->retry_after_ms;
        cb(Result<Lease>(std::move(l)));
      }));
}
void Client::renew(std::string_view key, uint64_t lease, int64_t ttl_ms, Callback<bool> cb) {
  Req r = keyed_req(pb::RENEW, key);
  r.lease = lease;
  r.ttl_ms = ttl_ms;
  value_call(*impl_, r, as_bool(std::move(cb)));
}
void Client::release(std::string_view key, uint64_t lease, Callback<bool> cb) {
  Req r = keyed_req(pb::RELEASE, key);
  r.lease = lease;
  value_call(*impl_, r, as_bool(std::move(cb)));
}
void Client::count(std::string_view key, Callback<int64_t> cb) {
  value_call(*impl_, keyed_req(pb::COUNT, key), std::move(cb));
}
// One request to any node, which sends it on to every member and adds up their counts.
void Client::heartbeat(std::string_view holder, int64_t ttl_ms, Callback<int64_t> cb) {
  Req r;
  r.op = pb::HEARTBEAT;
  r.holder = holder;
  r.ttl_ms = ttl_ms;
  r.cluster_wide = true;
  value_call(*impl_, r, std::move(cb));
}
void Client::release_all(std::string_view holder, Callback<int64_t> cb) {
  Req r;
  r.op = pb::RELEASE_ALL;
  r.holder = holder;
  r.cluster_wide = true;
  value_call(*impl_, r, std::move(cb));
}

void Client::topology(Callback<Topology> cb) { impl_->get_topology(std::move(cb)); }

// Blocking forms.
Result<Decision> Client::take(std::string_view key, const Limit& limit, int64_t cost) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>([&](Callback<Decision> cb) { take(key, limit, cost, std::move(cb)); });
}
Result<Decision> Client::take_waiting(std::string_view key, const Limit& limit,
                                      std::chrono::milliseconds wait, int64_t cost) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>(
      [&](Callback<Decision> cb) { take_waiting(key, limit, wait, cost, std::move(cb)); });
}
Result<Decision> Client::peek(std::string_view key, const Limit& limit, int64_t cost) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>([&](Callback<Decision> cb) { peek(key, limit, cost, std::move(cb)); });
}
Result<Decision> Client::adjust(std::string_view key, const Limit& limit, int64_t delta) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>([&](Callback<Decision> cb) { adjust(key, limit, delta, std::move(cb)); });
}
Result<bool> Client::reset(std::string_view key) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { reset(key, std::move(cb)); });
}
Result<Lease> Client::acquire(std::string_view key, const Limit& limit, std::string_view holder) {
  FG_CHECK_THREAD(Lease)
  return block<Lease>([&](Callback<Lease> cb) { acquire(key, limit, holder, std::move(cb)); });
}
Result<bool> Client::renew(std::string_view key, uint64_t lease, int64_t ttl_ms) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { renew(key, lease, ttl_ms, std::move(cb)); });
}
Result<bool> Client::release(std::string_view key, uint64_t lease) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { release(key, lease, std::move(cb)); });
}
Result<int64_t> Client::count(std::string_view key) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { count(key, std::move(cb)); });
}
Result<int64_t> Client::heartbeat(std::string_view holder, int64_t ttl_ms) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { heartbeat(holder, ttl_ms, std::move(cb)); });
}
Result<int64_t> Client::release_all(std::string_view holder) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { release_all(holder, std::move(cb)); });
}
Result<MultiDecision> Client::check_all(std::vector<Check> checks) {
  FG_CHECK_THREAD(MultiDecision)
  return block<MultiDecision>(
      [&](Callback<MultiDecision> cb) { check_all(std::move(checks), std::move(cb)); });
}
Result<Topology> Client::topology() {
  FG_CHECK_THREAD(Topology)
  return block<Topology>([&](Callback<Topology> cb) { topology(std::move(cb)); });
}

}  // namespace floodgate
