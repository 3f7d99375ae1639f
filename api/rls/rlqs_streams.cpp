// The quota service's streams on a gateway connection (StreamRateLimitQuotas): each report
// read as it arrives (rlqs.cpp: what it means), the stream's due slices and charges run as one
// request job on the connection's thread, and the actions made written when the gateway's
// window lets them — one pending action a bucket, a newer one replacing it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "grpc_conn.hpp"
#include "request_job.hpp"

namespace fg {

namespace {

using Conn = GrpcSession::Conn;
using Action = rlqs_pb::RateLimitQuotaResponse::BucketAction;

constexpr int64_t kLookNs = 100'000'000;  // versions looked at while streams are open
// A stream that reports nothing for this long is ended (Envoy reports every few seconds;
// a stream left open and silent only holds the node's memory).
constexpr int64_t kSilentNs = 60'000'000'000;

// Where a bucket's pending action is kept: its id's entries in name order.
std::string bucket_name(const rlqs_pb::BucketId& id) {
  std::vector<std::pair<std::string_view, std::string_view>> e(id.bucket().begin(),
                                                               id.bucket().end());
  std::sort(e.begin(), e.end());
  std::string name;
  for (const auto& [k, v] : e) {
    name.append(k).push_back('\0');
    name.append(v).push_back('\0');
  }
  return name;
}

// Actions made into the stream's pending ones (each bucket's newest), to be written.
void keep_actions(Conn& c, GrpcStream& s, rlqs_pb::RateLimitQuotaResponse& out) {
  if (out.bucket_action_size() == 0) return;
  GrpcStream::Quota& q = *s.quota;
  for (Action& a : *out.mutable_bucket_action()) {
    const std::string name = bucket_name(a.bucket_id());
    auto [it, fresh] = q.pending.try_emplace(name);
    if (!fresh) q.pending_bytes -= it->second.ByteSizeLong() + name.size();
    it->second = std::move(a);
    q.pending_bytes += it->second.ByteSizeLong() + name.size();
  }
  out.Clear();
  if (!s.answered && s.response_started) nghttp2_session_resume_data(c.h2, s.id);
}

void settled(Conn& c, const std::shared_ptr<GrpcStream>& s, std::vector<Outcome>& outcomes);

// The stream's due grants and charges, as one request job; its answers kept when back.
void run(Conn& c, const std::shared_ptr<GrpcStream>& s) {
  GrpcStream::Quota& q = *s->quota;
  if (s->answered || s->closed || q.job) return;
  rlqs_pb::RateLimitQuotaResponse out;
  c.parts.quota.due(q.stream, c.svc.clock->now_ns(), q.work, out);
  keep_actions(c, *s, out);
  if (q.work.empty()) {
    q.next_due = RlqsQuota::next_due(q.stream);
    return;
  }
  q.job = true;
  q.next_due = std::numeric_limits<int64_t>::max();
  Door door;
  door.mode = RouteMode::kForward;
  std::weak_ptr<Conn> weak = c.shared_from_this();
  RequestJob::start_here(c.svc, c.lane, q.work.requests, door, s,
                         [weak, s](std::vector<Outcome>& outcomes) {
                           const auto conn = weak.lock();
                           s->quota->job = false;
                           if (conn && !conn->dead && !s->closed) settled(*conn, s, outcomes);
                         });
}

void settled(Conn& c, const std::shared_ptr<GrpcStream>& s, std::vector<Outcome>& outcomes) {
  GrpcStream::Quota& q = *s->quota;
  rlqs_pb::RateLimitQuotaResponse out;
  c.parts.quota.settle(q.stream, q.work, outcomes.data(), c.svc.clock->now_ns(), out);
  keep_actions(c, *s, out);
  q.next_due = RlqsQuota::next_due(q.stream);
  c.next_look_ns = 1;  // (its next due time is new: the connection takes a turn)
  grpc_answers_ready(c);
}

}  // namespace

void rlqs_begin(Conn& c, GrpcStream& s) {
  s.quota = std::make_unique<GrpcStream::Quota>();
  s.quota->next_due = std::numeric_limits<int64_t>::max();
  s.quota->last_report_ns = c.svc.clock->now_ns();
  s.quota->stream.caller = grpc_caller(c);
  ++c.quota_streams;
  c.door.rules().stats().rlqs_streams.fetch_add(1, std::memory_order_relaxed);
  grpc_open(c, s);  // (its headers now; its messages as they are made)
}

void rlqs_message(Conn& c, const std::shared_ptr<GrpcStream>& s, std::string_view bytes) {
  GrpcStream::Quota& q = *s->quota;
  const int64_t now = c.svc.clock->now_ns();
  q.last_report_ns = now;
  rlqs_pb::RateLimitQuotaResponse out;
  const RlsStatus st = c.parts.quota.report(q.stream, bytes, now, out);
  if (!st.ok()) return grpc_fail(c, *s, static_cast<GrpcCode>(st.code), st.message);
  keep_actions(c, *s, out);
  if (c.held_bytes() > kGrpcMaxConnectionBytes) {
    return grpc_fail(c, *s, GrpcCode::kResourceExhausted,
                     "this connection holds more than " +
                         std::to_string(kGrpcMaxConnectionBytes >> 20) +
                         " MB of quota buckets and answers: report fewer buckets a stream");
  }
  run(c, s);
}

void rlqs_closed(Conn& c, GrpcStream& s) {
  if (!s.quota || s.quota->forgotten) return;  // (the close, and the connection's end)
  c.parts.quota.forget(s.quota->stream);
  s.quota->forgotten = true;
  s.quota->pending.clear();
  s.quota->pending_bytes = 0;
  --c.quota_streams;
  c.door.rules().stats().rlqs_streams.fetch_sub(1, std::memory_order_relaxed);
}

void rlqs_write_pending(Conn&, GrpcStream& s) {
  GrpcStream::Quota& q = *s.quota;
  if (q.pending.empty() || s.answered) return;
  rlqs_pb::RateLimitQuotaResponse r;
  for (auto& [name, a] : q.pending) *r.add_bucket_action() = std::move(a);
  q.pending.clear();
  q.pending_bytes = 0;
  s.out += grpc_frame(r);
}

// A policy changed, the rules reloaded or a bucket has a new holder (others' shares shrink):
// every stream looks again now; otherwise each when its next slice is due. Silent streams end.
int64_t rlqs_turn(Conn& c) {
  if (c.quota_streams == 0) return std::numeric_limits<int64_t>::max();
  const int64_t now = c.svc.clock->now_ns();
  const uint64_t seen[3] = {c.svc.policies->version(), c.door.rules().version(),
                            c.parts.quota.arrivals()};
  const bool all = !std::equal(std::begin(seen), std::end(seen), std::begin(c.seen));
  std::copy(std::begin(seen), std::end(seen), std::begin(c.seen));
  int64_t next = now + kLookNs;
  std::vector<std::shared_ptr<GrpcStream>> open;
  for (const auto& [id, s] : c.streams)
    if (s->quota && !s->answered) open.push_back(s);
  for (const auto& s : open) {
    GrpcStream::Quota& q = *s->quota;
    if (now - q.last_report_ns >= kSilentNs) {
      grpc_fail(c, *s, GrpcCode::kUnavailable,
                "no report for 60 s: the stream is closed (open another to report again)");
      continue;
    }
    if (q.job) continue;  // (its answer notes its next slice)
    if (all || q.next_due <= now) run(c, s);
    if (!q.job) next = std::min(next, q.next_due);
  }
  return next;
}

}  // namespace fg
