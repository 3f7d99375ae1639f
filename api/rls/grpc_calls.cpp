// The gateway door's unary methods: ShouldRateLimit (its descriptors translated by
// rls_translate, the calls of one turn run as one request job on the connection's I/O
// thread) and grpc.health.v1.Health/Check.
#include <memory>
#include <vector>

#include "grpc/health/v1/health.pb.h"
#include "grpc_conn.hpp"
#include "request_job.hpp"

namespace fg {

namespace {

constexpr char kRlsService[] = "envoy.service.ratelimit.v3.RateLimitService";
constexpr char kRlqsService[] = "envoy.service.rate_limit_quota.v3.RateLimitQuotaService";

void answer_call(GrpcSession::Conn& c, GrpcStream& s, const Outcome* outcomes) {
  if (s.closed || s.answered) return;
  const RlsStatus st = c.parts.translate.answer(*s.call, outcomes);
  if (!st.ok()) return grpc_fail(c, s, static_cast<GrpcCode>(st.code), st.message);
  grpc_answer(c, s, s.response);
}

}  // namespace

// A ShouldRateLimit call whose request is whole: matched and translated now; answered at once
// when it needs no counter (or is refused), else joins this turn's job.
void rls_call(GrpcSession::Conn& c, const std::shared_ptr<GrpcStream>& s) {
  RlsCallState& call = *s->call;
  const RlsStatus bad = c.parts.translate.prepare(call);
  if (!bad.ok()) {
    c.door.rules().stats().invalid.fetch_add(1, std::memory_order_relaxed);
    return grpc_fail(c, *s, static_cast<GrpcCode>(bad.code), bad.message);
  }
  if (call.requests.empty()) return answer_call(c, *s, nullptr);
  c.ready.push_back(s);
}

// The turn's calls as one request job: one flight for all of them, whose shards run in place
// when idle; each answered as the job comes back (a call whose stream closed meanwhile is
// dropped).
void rls_run_ready(GrpcSession::Conn& c) {
  if (c.ready.empty()) return;
  auto calls = std::make_shared<std::vector<std::shared_ptr<GrpcStream>>>(std::move(c.ready));
  c.ready.clear();
  std::vector<Request> requests;
  std::vector<size_t> first;  // per call: where its requests start
  for (const auto& s : *calls) {
    first.push_back(requests.size());
    requests.insert(requests.end(), s->call->requests.begin(), s->call->requests.end());
  }
  Door door;
  door.mode = RouteMode::kForward;
  door.client_id = c.client->id;
  std::weak_ptr<GrpcSession::Conn> weak = c.shared_from_this();
  RequestJob::start_here(c.svc, c.lane, std::move(requests), door, calls,
                         [weak, calls, first = std::move(first)](std::vector<Outcome>& outcomes) {
                           const auto conn = weak.lock();
                           if (!conn || conn->dead) return;
                           for (size_t i = 0; i < calls->size(); ++i) {
                             answer_call(*conn, *(*calls)[i], outcomes.data() + first[i]);
                           }
                           grpc_answers_ready(*conn);
                         });
}

// "" (the server as a whole) and the door's two services: SERVING once the node is ready (the
// same test as /readyz), else NOT_SERVING; any other name is unknown, as gRPC's own health
// service answers.
void health_call(GrpcSession::Conn& c, GrpcStream& s) {
  grpc::health::v1::HealthCheckRequest req;
  std::string_view msg;
  if (s.body.size() >= 5) msg = std::string_view(s.body).substr(5);
  if (!req.ParseFromArray(msg.data(), static_cast<int>(msg.size()))) {
    return grpc_fail(c, s, GrpcCode::kInvalidArgument, "the request is not a HealthCheckRequest");
  }
  const std::string& name = req.service();
  if (!name.empty() && name != kRlsService && name != kRlqsService) {
    return grpc_fail(c, s, GrpcCode::kNotFound, "service name unknown");
  }
  grpc::health::v1::HealthCheckResponse r;
  r.set_status(c.door.serving() ? grpc::health::v1::HealthCheckResponse::SERVING
                                : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  grpc_answer(c, s, r);
}

}  // namespace fg
