// What the gateway door's connection files share (grpc_session.cpp: HTTP/2 and gRPC's
// framing; grpc_calls.cpp: the unary methods; rlqs_streams.cpp: the quota service): one
// connection's state and its streams. Everything here runs on the connection's I/O thread.
#pragma once
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "gateway_door.hpp"
#include "grpc_session.hpp"
#include "rlqs.hpp"
#include "rls_translate.hpp"
#include "services.hpp"

namespace fg {

// gRPC's status codes the door ends calls with (RlsStatusCode's are the same numbers).
enum class GrpcCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

// Bounds on what one connection can make the node hold.
constexpr size_t kGrpcMaxHeaderBytes = 16 * 1024;  // one stream's headers (name + value + 32)
constexpr size_t kGrpcMaxMessageBytes = 1 << 20;   // one message
constexpr int kGrpcMaxQuotaStreams = 16;           // StreamRateLimitQuotas at once
constexpr int64_t kGrpcMaxConnectionBytes = 32 << 20;
constexpr size_t kGrpcOutputHigh = 256 * 1024;  // frames made ahead of the socket, at most

// One HTTP/2 stream: a call, from its first HEADERS to its close.
struct GrpcStream {
  enum class Method : uint8_t { kNone, kRls, kHealth, kRlqs, kOther };
  int32_t id = 0;
  Method method = Method::kNone;
  size_t header_bytes = 0;
  std::string path, content_type, authorization, encoding, http_method;
  bool headers_done = false;  // its request headers are whole (and were accepted)
  bool request_done = false;  // the gateway ended its side (END_STREAM)
  bool answered = false;      // its status is decided: nothing more is read from it
  bool closed = false;        // nghttp2 closed it (the connection may still hold it in a job)
  bool response_started = false;
  int64_t started_ns = 0;  // (steady clock) its first HEADERS
  std::string body;        // the request's bytes not yet taken as messages
  // The answer being written: message bytes (framed), then, once `finish`, the trailers.
  std::string out;
  size_t out_pos = 0;
  bool finish = false;
  GrpcCode status = GrpcCode::kOk;
  std::string status_text;
  // ShouldRateLimit: the call's translation.
  std::unique_ptr<RlsCallState> call;
  envoy::service::ratelimit::v3::RateLimitResponse response;
  // StreamRateLimitQuotas: its buckets, the work out for them, and the actions made and not
  // yet written — one per bucket (a newer one replaces it: a gateway that does not read
  // holds the node to one action a bucket, never a queue).
  struct Quota {
    RlqsStream stream;
    RlqsWork work;
    std::map<std::string, rlqs_pb::RateLimitQuotaResponse::BucketAction> pending;
    size_t pending_bytes = 0;
    bool job = false;
    bool forgotten = false;      // its holders left their counters (closed)
    int64_t next_due = 0;        // (clock ns) its holders' earliest; INT64_MAX: none
    int64_t last_report_ns = 0;  // (clock) when a report last came
  };
  std::unique_ptr<Quota> quota;
};

struct GrpcSession::Conn : std::enable_shared_from_this<GrpcSession::Conn> {
  Conn(Services& svc, GatewayDoor& door, Lane& lane, std::shared_ptr<ClientInfo> client);
  ~Conn();

  Services& svc;
  GatewayDoor& door;
  GatewayDoor::LaneParts& parts;
  Lane& lane;
  std::shared_ptr<ClientInfo> client;
  nghttp2_session* h2 = nullptr;
  int64_t h2_bytes = 0;  // what nghttp2 holds for it (its allocator counts)
  std::map<int32_t, std::shared_ptr<GrpcStream>> streams;
  std::vector<std::shared_ptr<GrpcStream>> ready;  // ShouldRateLimit calls of this turn
  std::function<void()> wake;                      // the shell's: answers to write
  bool in_process = false;
  bool flush_wanted = false;   // answers came back outside process(): take_pushes writes them
  bool dead = false;           // a protocol error or GOAWAY: close once written
  bool preface = false;        // the gateway's first bytes were HTTP/2's
  int64_t opened_ns = 0;       // (steady)
  int64_t last_active_ns = 0;  // (steady) its last stream's end, or a frame
  int quota_streams = 0;
  int header_refusals = 0;  // streams reset for headers past the bound
  uint64_t seen[3] = {};    // policies', rules' and quota holders' versions last looked at
  int64_t next_look_ns = 0;

  std::shared_ptr<GrpcStream> find(int32_t id) {
    auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second;
  }
  int64_t held_bytes() const;
};

// grpc_session.cpp: answering.
// A message as gRPC frames it: a byte of flags (0: not compressed), its length, its bytes.
std::string grpc_frame(const google::protobuf::MessageLite& m);
// The call's answer: one message (serialized; framed here), then status OK.
void grpc_answer(GrpcSession::Conn& c, GrpcStream& s, const google::protobuf::MessageLite& m);
// The call ends with `code` (trailers only, if nothing was sent yet).
void grpc_fail(GrpcSession::Conn& c, GrpcStream& s, GrpcCode code, std::string_view text);
// A message on a stream that stays open (the quota service's answers).
void grpc_send(GrpcSession::Conn& c, GrpcStream& s, const google::protobuf::MessageLite& m);
// Begins the answer of a stream that stays open: its headers, and a body to come.
void grpc_open(GrpcSession::Conn& c, GrpcStream& s);
// Answers made outside process(): the shell is woken to write them.
void grpc_answers_ready(GrpcSession::Conn& c);
// Whether the call carries the door's token (none set: yes).
bool grpc_token_ok(GrpcSession::Conn& c, const GrpcStream& s);
int64_t grpc_now_ns();  // (steady clock)
// Who calls, for the counters it makes (rls_keys.hpp): its connection's peer address.
std::string grpc_caller(const GrpcSession::Conn& c);

// grpc_calls.cpp: the unary methods, their request whole.
void rls_call(GrpcSession::Conn& c, const std::shared_ptr<GrpcStream>& s);
void health_call(GrpcSession::Conn& c, GrpcStream& s);
void rls_run_ready(GrpcSession::Conn& c);  // this turn's ShouldRateLimit calls, as one job

// rlqs_streams.cpp: StreamRateLimitQuotas.
void rlqs_begin(GrpcSession::Conn& c, GrpcStream& s);
void rlqs_message(GrpcSession::Conn& c, const std::shared_ptr<GrpcStream>& s,
                  std::string_view bytes);
void rlqs_closed(GrpcSession::Conn& c, GrpcStream& s);
// The streams' due slices, and the next time one is due (clock ns; INT64_MAX: none).
int64_t rlqs_turn(GrpcSession::Conn& c);
// A stream's pending actions into its body (when the last message went out).
void rlqs_write_pending(GrpcSession::Conn& c, GrpcStream& s);

}  // namespace fg
