// Encoding a call's request and reading its result.
#include "call.hpp"

namespace floodgate {

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
std::string Req::encode() const {
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
  }
  v.has_cost = has_cost;
  v.cost = cost;
  v.ttl_ms = ttl_ms;
  v.lease = lease;
  v.holder = holder;
  v.cluster_wide = cluster_wide;
  return fg::wire::encode_request(v);
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
