// Encoding a call's request and reading its result.
#include "call.hpp"

#include <vector>

namespace floodgate {

namespace {
// How many finished calls a thread keeps for reuse: about a pipeline's worth.
constexpr size_t kPoolMax = 4096;
thread_local bool pool_gone = false;  // (trivially destructible: readable to the very end)
struct Pool {
  std::vector<Call*> free;
  ~Pool() {
    pool_gone = true;
    for (Call* c : free) delete c;
  }
};
thread_local Pool pool;
}  // namespace

CallPtr Call::make() {
  if (!pool_gone && !pool.free.empty()) {
    Call* c = pool.free.back();
    pool.free.pop_back();
    return CallPtr(c);
  }
  return CallPtr(new Call());
}

void Call::clear() {
  finished = keyed = via_peer = maybe_counted = why_from_node = no_retry = false;
  want = Want::kRaw;
  attempts = 0;
  slot = kNoSlot;
  on_decision = nullptr;
  on_value = nullptr;
  done = nullptr;
  deadline = {};
  req.clear();
  addr.clear();
  why.clear();
}

void Call::recycle(Call* c) {
  // What the callbacks captured goes now, as it would with the call; that may let go of
  // other calls, which come back here first.
  c->clear();
  if (pool_gone || pool.free.size() >= kPoolMax) {
    delete c;
    return;
  }
  pool.free.push_back(c);
}

std::string_view status_name(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kError:
      return "error";
    case Status::kWrongType:
      return "wrongtype";
    case Status::kUnavailable:
      return "unavailable";
    case Status::kTimeout:
      return "timeout";
    case Status::kNotReplicated:
      return "notreplicated";
    case Status::kKeyLimit:
      return "keylimit";
    case Status::kNoAuth:
      return "noauth";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kNoPerm:
      return "noperm";
  }
  return "?";
}

Status status_of(int code) {
  switch (code) {
    case pb::OK:
      return Status::kOk;
    case pb::WRONGTYPE:
      return Status::kWrongType;
    case pb::MOVED:
    case pb::TRYAGAIN:
    case pb::CLUSTERDOWN:
      return Status::kUnavailable;
    case pb::NOTREPLICATED:
      return Status::kNotReplicated;
    case pb::OOM:
      return Status::kKeyLimit;
    case pb::NOAUTH:
      return Status::kNoAuth;
    case pb::UNSUPPORTED:
      return Status::kUnsupported;
    case pb::NOPERM:
      return Status::kNoPerm;
    default:
      return Status::kError;
  }
}

// Requests are written straight in the wire format of native.proto's Request (no message
// objects on the hot path), by the same codec the node reads them with.
void Req::encode(std::string& out) const {
  fg::wire::RequestView v;
  v.op = op;
  v.key = key;
  if (limit && limit->kind == Limit::Kind::kPolicy) v.policy = limit->name;
  if (limit && limit->kind != Limit::Kind::kPolicy) {
    v.has_limit = true;
    v.kind = static_cast<int>(limit->kind);  // the same numbers as native.proto's Kind
    v.a = limit->a;
    v.b = limit->b;
    v.period_ms = limit->period_ms;
    v.time_zone = limit->time_zone;
  }
  v.has_cost = has_cost;
  v.wait_ms = wait_ms;
  v.cost = cost;
  v.ttl_ms = ttl_ms;
  v.lease = lease;
  v.holder = holder;
  v.cluster_wide = cluster_wide;
  fg::wire::encode_request(v, out);
}

Decision decision_of(const fg::wire::ResultView& r) {
  Decision d;
  d.allowed = r.allowed;
  d.limit = r.limit;
  d.remaining = r.remaining;
  d.retry_after_ms = r.retry_after_ms;
  d.reset_after_ms = r.reset_after_ms;
  d.unavailable = std::string(r.unavailable);
  return d;
}

}  // namespace floodgate
