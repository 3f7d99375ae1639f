// The gateway door's transport: gRPC's core API, its completion queue and thread, corking,
// health. What a ShouldRateLimit call means — descriptors -> limits -> Requests, outcomes ->
// statuses — is rls_translate.cpp's.
#include "rls_door.hpp"

#include <absl/synchronization/mutex.h>
#include <fcntl.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <grpcpp/support/status.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "command_table.hpp"
#include "door_tags.hpp"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "errors.hpp"
#include "grpc/health/v1/health.pb.h"
#include "io_batcher.hpp"
#include "key_table.hpp"
#include "request_job.hpp"
#include "rlqs_door.hpp"
#include "rls_config.hpp"
#include "rls_keys.hpp"
#include "rls_translate.hpp"
#include "services.hpp"

namespace fg {

namespace rls = envoy::service::ratelimit::v3;
using RlsCode = rls::RateLimitResponse::Code;

namespace {

constexpr int kMaxReceiveBytes = 1 << 20;  // one call's request, at most
// One completion queue, served by one thread (Service keeps that thread's copies of the
// rules and the user), and the calls it keeps awaited.
constexpr int kArmed = 64;
constexpr size_t kBatchCalls = 256;  // calls in one request job, at most
constexpr auto kLanePoll = std::chrono::microseconds(100);

}  // namespace

// Whether `md` carries "authorization: Bearer <token>" (compared in constant time).
bool door_bearer(const grpc_metadata_array& md, const std::string& token) {
  const std::string want = "Bearer " + token;
  for (size_t i = 0; i < md.count; ++i) {
    const grpc_slice& k = md.metadata[i].key;
    const grpc_slice& v = md.metadata[i].value;
    const std::string_view key(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(k)),
                               GRPC_SLICE_LENGTH(k));
    if (key != "authorization" || GRPC_SLICE_LENGTH(v) != want.size()) continue;
    if (CRYPTO_memcmp(GRPC_SLICE_START_PTR(v), want.data(), want.size()) == 0) return true;
  }
  return false;
}

// A call as gRPC's core API hands it over: its request (the method's one message), and its
// answer sent with the close in one batch — the initial metadata, the message and the
// status together.
struct CoreCall : DoorTag {
  grpc_call* call = nullptr;
  gpr_timespec deadline{};
  grpc_metadata_array metadata{};  // the client's (unread)
  grpc_byte_buffer* payload = nullptr;
  grpc_byte_buffer* out = nullptr;
  grpc_slice details{};
  int cancelled = 0;
  int fd = -1;  // its connection's socket, when the door accepted it (plain gRPC)

  explicit CoreCall(What w) : DoorTag(w) { grpc_metadata_array_init(&metadata); }
  ~CoreCall() {
    release();
    grpc_metadata_array_destroy(&metadata);
  }
  CoreCall(const CoreCall&) = delete;
  CoreCall& operator=(const CoreCall&) = delete;

  // Answers with `message` (taken; null: none) and `code`, whose text is `text`.
  void send(grpc_byte_buffer* message, grpc_status_code code, std::string_view text) {
    finishing = true;
    out = message;
    grpc_op ops[4] = {};
    grpc_op* op = ops;
    op->op = GRPC_OP_SEND_INITIAL_METADATA;
    ++op;
    if (out) {
      op->op = GRPC_OP_SEND_MESSAGE;
      op->data.send_message.send_message = out;
      ++op;
    }
    op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    op->data.send_status_from_server.status = code;
    if (code != GRPC_STATUS_OK) {
      details = grpc_slice_from_copied_buffer(text.data(), text.size());
      op->data.send_status_from_server.status_details = &details;
    }
    ++op;
    op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op->data.recv_close_on_server.cancelled = &cancelled;
    ++op;
    if (grpc_call_start_batch(call, ops, static_cast<size_t>(op - ops), this, nullptr) !=
        GRPC_CALL_OK) {
      // (only a misuse of the API refuses a batch: the call is cancelled, never left open)
      spdlog::error("gateway door: gRPC refused a call's answer");
      grpc_call_cancel(call, nullptr);
    }
  }
  void fail(const grpc::Status& st) {
    send(nullptr, static_cast<grpc_status_code>(st.error_code()), st.error_message());
  }
  void fail(const RlsStatus& st) {  // (RlsStatusCode's numbers are gRPC's)
    send(nullptr, static_cast<grpc_status_code>(st.code), st.message);
  }
  void answer(const google::protobuf::MessageLite& m) {
    const size_t n = m.ByteSizeLong();
    grpc_slice s = grpc_slice_malloc(n);
    m.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer* bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    send(bb, GRPC_STATUS_OK, {});
  }

  // The request's message into `m`; false when it is none. (No message: an empty one.)
  bool parse(google::protobuf::MessageLite& m) const {
    if (!payload) {
      m.Clear();
      return true;
    }
    if (payload->type == GRPC_BB_RAW && payload->data.raw.compression == GRPC_COMPRESS_NONE &&
        payload->data.raw.slice_buffer.count == 1) {
      const grpc_slice& s = payload->data.raw.slice_buffer.slices[0];
      return m.ParseFromArray(GRPC_SLICE_START_PTR(s), static_cast<int>(GRPC_SLICE_LENGTH(s)));
    }
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, payload)) return false;
    grpc_slice all = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    const bool ok =
        m.ParseFromArray(GRPC_SLICE_START_PTR(all), static_cast<int>(GRPC_SLICE_LENGTH(all)));
    grpc_slice_unref(all);
    return ok;
  }

  // gRPC is done with it: ready to be asked for again.
  void release() {
    if (call) grpc_call_unref(call);
    call = nullptr;
    if (payload) grpc_byte_buffer_destroy(payload);
    payload = nullptr;
    if (out) grpc_byte_buffer_destroy(out);
    out = nullptr;
    grpc_slice_unref(details);
    details = grpc_empty_slice();
    metadata.count = 0;
    cancelled = 0;
    fd = -1;
    finishing = false;
  }
};

// grpc.health.v1.Health/Check, answered at once.
struct HealthCall : CoreCall {
  HealthCall() : CoreCall(What::kHealth) {}
};

// A call of a method the door does not serve: UNIMPLEMENTED, as gRPC answers it.
struct OtherCall : CoreCall {
  grpc_call_details details_of{};
  OtherCall() : CoreCall(What::kOther) { grpc_call_details_init(&details_of); }
  ~OtherCall() { grpc_call_details_destroy(&details_of); }
};

// One call on its way: gRPC's side of it (the completion queue's tag), what each descriptor
// matched and where its outcome will be. Kept in a pool and used again (RlsCallPool): what a
// call parses, matches and answers goes into the parts it had last time, so a gateway's
// call costs no allocation of the door's own.
struct RlsCall : CoreCall, RlsCallState {
  RlsCall() : CoreCall(What::kRls) {}
  // The call is this object's until its last completion (`finishing`), held by `self`
  // until then (and by the request job while one runs).
  std::shared_ptr<RlsCall> self;

  // (the request is parsed into again each call: Clear keeps its descriptors' entries and
  // their strings); the answer is built in an arena whose first block is the call's own.
  size_t request_bytes = 0;
  alignas(8) char block[2048];
  google::protobuf::Arena arena{arena_options(block, sizeof block)};

  // Ready for a call (from the pool or new).
  void begin() {
    response = google::protobuf::Arena::CreateMessage<rls::RateLimitResponse>(&arena);
  }
  // gRPC is done with it: back to how begin() wants it. A call that was large (a hostile
  // one: 1 MiB, thousands of descriptors) leaves nothing of its size behind.
  void end() {
    release();
    response = nullptr;
    arena.Reset();
    cfg.reset();
    user.reset();
    mode = FailMode::kError;
    items.clear();
    requests.clear();
    constexpr size_t kKeep = 16;  // descriptors whose parts are kept
    if (request_bytes > 4096 || keys.size() > kKeep || metadata.capacity > 64) {
      request = rls::RateLimitRequest();
      std::vector<Item>().swap(items);
      std::vector<std::string>().swap(keys);
      std::vector<Request>().swap(requests);
      grpc_metadata_array_destroy(&metadata);
      grpc_metadata_array_init(&metadata);
    } else {
      request.Clear();
    }
    request_bytes = 0;
  }

 private:
  static google::protobuf::ArenaOptions arena_options(char* first, size_t size) {
    google::protobuf::ArenaOptions o;
    o.initial_block = first;
    o.initial_block_size = size;
    return o;
  }
};

// Calls done with, for the next ones; bounded (a burst past it is freed as it ends).
class RlsCallPool {
 public:
  std::shared_ptr<RlsCall> take(const std::shared_ptr<RlsCallPool>& self) {
    std::unique_ptr<RlsCall> c;
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        c = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!c) c = std::make_unique<RlsCall>();
    c->begin();
    return {c.release(), [pool = self](RlsCall* done) { pool->give_back(done); }};
  }

 private:
  static constexpr size_t kKept = 256;
  void give_back(RlsCall* done) {
    std::unique_ptr<RlsCall> c(done);
    c->end();
    std::lock_guard lock(mu_);
    if (free_.size() < kKept) free_.push_back(std::move(c));
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<RlsCall>> free_;
};

// ShouldRateLimit's calls: matched, decoded into the core's requests, answered. The method
// takes raw bytes: a request that is no RateLimitRequest gets INVALID_ARGUMENT. Calls are
// taken from the completion queue by the door's own thread (gRPC's core API, asynchronous:
// no thread per call, no hand-over between gRPC's threads per call).
class RlsDoor::Service final {
 public:
  using Token = std::function<std::shared_ptr<const std::string>()>;
  Service(Services& svc, RlsRules& rules, const RlsDoorOptions& options, Token token)
      : svc_(svc),
        rules_(rules),
        options_(options),
        token_(std::move(token)),
        translate_(svc, rules, options.user, options.response_headers,
                   options.max_keys_per_domain) {}

  // Waits for the next call of `method` on `cq`.
  void arm(grpc_server* server, void* method, grpc_completion_queue* cq) {
    std::shared_ptr<RlsCall> c = pool_->take(pool_);
    c->self = c;
    if (grpc_server_request_registered_call(server, method, &c->call, &c->deadline, &c->metadata,
                                            &c->payload, cq, cq, c.get()) != GRPC_CALL_OK) {
      c->self.reset();
    }
  }

  // A call arrived: answered here (bad input, nothing to count), or its requests join
  // `batch` for the core.
  void handle(RlsCall& c, std::vector<std::shared_ptr<RlsCall>>& batch) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    if (options_.cert_pem.empty()) c.fd = socket_of(c.call);  // (TLS: gRPC's own sockets)
    c.request_bytes = c.payload ? grpc_byte_buffer_length(c.payload) : 0;
    if (const auto token = token_(); token && !door_bearer(c.metadata, *token)) {
      rules_.stats().unauthenticated.fetch_add(1, std::memory_order_relaxed);
      return c.fail({grpc::StatusCode::UNAUTHENTICATED,
                     "this gateway door wants authorization: Bearer <its rls-token-file's token>"});
    }
    if (!c.parse(c.request)) {
      rules_.stats().invalid.fetch_add(1, std::memory_order_relaxed);
      return c.fail({grpc::StatusCode::INVALID_ARGUMENT, "the request is not a RateLimitRequest"});
    }
    const RlsStatus bad = translate_.prepare(c);
    if (!bad.ok()) {
      rules_.stats().invalid.fetch_add(1, std::memory_order_relaxed);
      return c.fail(bad);
    }
    if (c.requests.empty()) return answer(c, nullptr);
    batch.push_back(c.self);
  }

  // The calls a queue had ready at once go to one I/O lane as one request job: one
  // hand-over between threads for them all, and one flight.
  void submit(std::vector<std::shared_ptr<RlsCall>>& batch, Lane& lane) {
    if (batch.empty()) return;
    auto calls = std::make_shared<std::vector<std::shared_ptr<RlsCall>>>(std::move(batch));
    batch.clear();
    std::vector<Request> requests;
    std::vector<size_t> first;  // per call: where its requests start
    for (auto& c : *calls) {
      first.push_back(requests.size());
      requests.insert(requests.end(), c->requests.begin(), c->requests.end());
    }
    Door door;
    door.mode = RouteMode::kForward;
    ++awaiting_;
    RequestJob::start_here(svc_, lane, std::move(requests), door, calls,
                           [this, calls, first = std::move(first)](std::vector<Outcome>& outcomes) {
                             --awaiting_;
                             cork(*calls, true);
                             for (size_t i = 0; i < calls->size(); ++i) {
                               answer(*(*calls)[i], outcomes.data() + first[i]);
                             }
                             cork(*calls, false);
                           });
  }
  // gRPC writes each call's answer at once, a segment (and a wake-up of the gateway) per
  // call, though a batch answers many calls of one connection together. The connections
  // with two answers or more in the batch are corked while they are written: each sends its
  // answers in one segment when uncorked. (A connection gRPC accepted itself — TLS — is
  // not known by its socket, and is written as gRPC writes.)
  void cork(const std::vector<std::shared_ptr<RlsCall>>& calls, bool on) {
    if (on) {
      corked_.clear();
      for (const auto& c : calls) {
        if (c->fd >= 0) corked_.push_back(c->fd);
      }
      std::sort(corked_.begin(), corked_.end());
      size_t kept = 0;
      for (size_t i = 0; i + 1 < corked_.size(); ++i) {
        if (corked_[i] == corked_[i + 1] && (kept == 0 || corked_[kept - 1] != corked_[i])) {
          corked_[kept++] = corked_[i];
        }
      }
      corked_.resize(kept);
    }
    // (A socket is the connection's until gRPC destroys the connection, which the calls
    // being answered keep alive; a connection the peer closed meanwhile fails the
    // setsockopt harmlessly.)
    const int value = on ? 1 : 0;
    for (int fd : corked_) setsockopt(fd, IPPROTO_TCP, TCP_CORK, &value, sizeof value);
    if (!on) corked_.clear();
  }

  // The socket of a call's connection, when the door accepted it (gRPC names such a
  // connection's peer "fd:N"); else -1.
  static int socket_of(grpc_call* call) {
    char* peer = grpc_call_get_peer(call);
    int fd = -1;
    if (peer && std::strncmp(peer, "fd:", 3) == 0) {
      const char* end = peer + std::strlen(peer);
      if (std::from_chars(peer + 3, end, fd).ptr != end) fd = -1;
    }
    gpr_free(peer);
    return fd;
  }

  // `outcomes`: the call's requests' (null when it made none).
  void answer(RlsCall& c, const Outcome* outcomes) {
    const RlsStatus st = translate_.answer(c, outcomes);
    if (!st.ok()) return c.fail(st);
    c.answer(*c.response);
  }

  // Request jobs not yet back (touched by the queue's thread only).
  int awaiting() const { return awaiting_; }

  // gRPC is done with a call.
  void done(RlsCall& c) {
    if (c.finishing) in_flight_.fetch_sub(1, std::memory_order_relaxed);
    c.self.reset();  // (last: it may free `c`)
  }
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  Services& svc_;
  RlsRules& rules_;
  const RlsDoorOptions& options_;
  std::shared_ptr<RlsCallPool> pool_ = std::make_shared<RlsCallPool>();
  Token token_;
  RlsTranslator translate_;  // the queue's thread's
  std::vector<int> corked_;
  std::atomic<int64_t> in_flight_{0};  // calls taken and not yet finished
  int awaiting_ = 0;
};

RlsDoor::RlsDoor(Services& svc, RlsRules& rules, RlsDoorOptions options)
    : svc_(svc), rules_(rules), options_(std::move(options)) {}

RlsDoor::~RlsDoor() { stop(); }

namespace {

grpc_arg int_arg(const char* name, int value) {
  grpc_arg a{};
  a.type = GRPC_ARG_INTEGER;
  a.key = const_cast<char*>(name);
  a.value.integer = value;
  return a;
}

grpc_arg pointer_arg(const char* name, void* p, const grpc_arg_pointer_vtable* vtable) {
  grpc_arg a{};
  a.type = GRPC_ARG_POINTER;
  a.key = const_cast<char*>(name);
  a.value.pointer.p = p;
  a.value.pointer.vtable = vtable;
  return a;
}

constexpr char kRlsService[] = "envoy.service.ratelimit.v3.RateLimitService";
constexpr char kRlsMethod[] = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
constexpr char kHealthMethod[] = "/grpc.health.v1.Health/Check";
constexpr char kRlqsService[] = "envoy.service.rate_limit_quota.v3.RateLimitQuotaService";
constexpr char kRlqsMethod[] =
    "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas";
constexpr int kArmedOther = 4;  // calls of unknown methods awaited at once

// gRPC's own messages (errors, unless GRPC_VERBOSITY asks for more) in the node's log.
void log_grpc(gpr_log_func_args* a) {
  const auto level = a->severity == GPR_LOG_SEVERITY_ERROR  ? spdlog::level::err
                     : a->severity == GPR_LOG_SEVERITY_INFO ? spdlog::level::info
                                                            : spdlog::level::debug;
  spdlog::log(level, "gateway door: gRPC: {}", a->message);
}

}  // namespace

Status RlsDoor::start(const std::string& host, int port) {
  gpr_set_log_function(log_grpc);
  // gRPC's mutexes (Abseil's) look for lock-order cycles on every lock by default: a cost
  // per call for a check meant for debugging.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc_init();
  auto token = [this] {
    std::lock_guard<std::mutex> lock(token_mu_);
    return token_;
  };
  service_ = std::make_unique<Service>(svc_, rules_, options_, token);
  RlqsOptions rlqs;
  rlqs.slice_ns = std::max<int64_t>(1, options_.rlqs_slice_ms) * 1'000'000;
  rlqs.user = options_.user;
  rlqs.max_keys_per_domain = options_.max_keys_per_domain;
  rlqs_ = std::make_unique<RlqsServer>(svc_, rules_, rlqs, token);
  // What callers can make the door hold: the memory of all its connections, the streams one
  // connection may open, one message's size. The port is this node's alone (no
  // SO_REUSEPORT: a second node given the same port fails to start, it does not share it).
  quota_ = grpc_resource_quota_create("rls-door");
  set_memory(options_.memory_bytes);
  // A connection with no call for idle_ms is closed (for ever: INT_MAX); a TLS one must
  // finish its handshake within handshake_ms (a plain one must begin within it:
  // accept_loop).
  const auto clamp = [](int64_t ms) {
    return static_cast<int>(std::min<int64_t>(ms, std::numeric_limits<int>::max()));
  };
  grpc_arg args[] = {
      int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, kMaxReceiveBytes),
      int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_streams),
      int_arg(GRPC_ARG_ALLOW_REUSEPORT, 0),
      int_arg(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
              options_.idle_ms > 0 ? clamp(options_.idle_ms) : std::numeric_limits<int>::max()),
      int_arg(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, clamp(options_.handshake_ms)),
      pointer_arg(GRPC_ARG_RESOURCE_QUOTA, quota_, grpc_resource_quota_arg_vtable()),
  };
  const grpc_channel_args channel_args{std::size(args), args};
  server_ = grpc_server_create(&channel_args, nullptr);
  cq_ = grpc_completion_queue_create_for_next(nullptr);
  grpc_server_register_completion_queue(server_, cq_, nullptr);
  rls_method_ = grpc_server_register_method(server_, kRlsMethod, nullptr,
                                            GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  health_method_ = grpc_server_register_method(server_, kHealthMethod, nullptr,
                                               GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  rlqs_method_ =
      grpc_server_register_method(server_, kRlqsMethod, nullptr, GRPC_SRM_PAYLOAD_NONE, 0);
  grpc_server_credentials* creds = nullptr;
  if (!options_.cert_pem.empty()) {
    using C = RlsDoorOptions::ClientCerts;
    grpc_ssl_pem_key_cert_pair pair{options_.key_pem.c_str(), options_.cert_pem.c_str()};
    creds = grpc_ssl_server_credentials_create_ex(
        options_.ca_pem.empty() ? nullptr : options_.ca_pem.c_str(), &pair, 1,
        options_.client_certs == C::kRequired
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
        : options_.client_certs == C::kOptional ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
                                                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
        nullptr);
  } else {
    creds = grpc_insecure_server_credentials_create();
  }
  const std::string addr =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  std::string why;
  if (options_.cert_pem.empty()) {
    // Plain gRPC: the door accepts the connections and hands them to gRPC, so it knows each
    // one's socket (Service::cork).
    port_ = listen_plain(host, port, why);
    plain_creds_ = creds;
  } else {
    port_ = creds ? grpc_server_add_http2_port(server_, addr.c_str(), creds) : 0;
    if (creds) grpc_server_credentials_release(creds);
  }
  if (port_ == 0) {
    if (plain_creds_) grpc_server_credentials_release(plain_creds_);
    plain_creds_ = nullptr;
    // (never started: nothing to shut down but the queue)
    grpc_server_destroy(server_);
    server_ = nullptr;
    grpc_completion_queue_shutdown(cq_);
    while (grpc_completion_queue_next(cq_, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq_);
    cq_ = nullptr;
    release_quota();
    grpc_shutdown();
    return Error{"cannot listen on " + addr + (why.empty() ? "" : ": " + why)};
  }
  grpc_server_start(server_);
  if (listen_fd_ >= 0) {
    kill_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  set_serving(false);
  // (a few calls awaited at once, so a burst of new streams is taken without a wait)
  for (int i = 0; i < kArmed; ++i) service_->arm(server_, rls_method_, cq_);
  arm_health();
  for (int i = 0; i < kArmedOther; ++i) arm_other();
  for (int i = 0; i < kArmedOther; ++i) rlqs_->arm(server_, rlqs_method_, cq_);
  thread_ = std::thread([this] { serve(); });
  return {};
}

// The queue's thread is also the I/O lane its calls' requests run on: its own event loop and
// flight batcher, polled between the queue's events. The requests of the calls the queue
// had ready together join one flight, whose shards run in place here when idle — no
// hand-over to another thread, and the answers are sent from here. While a flight is out
// (a forward to another node, a busy shard, a slot's state awaited) the loop looks at its
// event loop every 100 µs as well.
void RlsDoor::serve() {
  asio::io_context io;
  IoBatcher batcher(io, svc_, svc_.settings.max_batch_commands * 4);  // (as an I/O thread's)
  Lane lane{&io, &batcher};
  std::vector<std::shared_ptr<RlsCall>> batch;
  auto take = [&](const grpc_event& ev) {
    auto* t = static_cast<DoorTag*>(ev.tag);
    const bool ok = ev.success != 0;
    switch (t->what) {
      case DoorTag::What::kShutdown:
        shut_down_.store(true);
        return;
      case DoorTag::What::kHealth:
        return health(static_cast<HealthCall*>(t), ok);
      case DoorTag::What::kOther:
        return other(static_cast<OtherCall*>(t), ok);
      case DoorTag::What::kRlqs:
        return rlqs_->event(t, ok, stopping_.load(std::memory_order_relaxed), lane);
      case DoorTag::What::kRls:
        break;
    }
    auto* c = static_cast<RlsCall*>(t);
    if (!ok || c->finishing) return service_->done(*c);
    if (!stopping_.load(std::memory_order_relaxed)) service_->arm(server_, rls_method_, cq_);
    service_->handle(*c, batch);
  };
  const gpr_timespec now = gpr_time_0(GPR_CLOCK_MONOTONIC);
  for (;;) {
    // (the quota service's next slice due, at the latest)
    int64_t wait_us = service_->awaiting() > 0 ? kLanePoll.count() : -1;
    if (const int64_t slice_ns = rlqs_->wait_ns(); slice_ns >= 0) {
      const int64_t us = slice_ns / 1000 + 1;
      wait_us = wait_us < 0 ? us : std::min(wait_us, us);
    }
    const gpr_timespec until = wait_us >= 0
                                   ? gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                  gpr_time_from_micros(wait_us, GPR_TIMESPAN))
                                   : gpr_inf_future(GPR_CLOCK_MONOTONIC);
    grpc_event ev = grpc_completion_queue_next(cq_, until, nullptr);
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    {
      IoBatcher::Turn turn(batcher);  // (the flight leaves when it closes, in place)
      if (ev.type == GRPC_OP_COMPLETE) {
        take(ev);
        // (and whatever else is ready now, without waiting)
        while (batch.size() < kBatchCalls) {
          ev = grpc_completion_queue_next(cq_, now, nullptr);
          if (ev.type != GRPC_OP_COMPLETE) break;
          take(ev);
        }
        service_->submit(batch, lane);
      }
      rlqs_->tick(lane);
    }
    io.restart();
    io.poll();
  }
}

// A listening socket of the door's own on `host`:`port`; the port it got, or 0 (`why`).
int RlsDoor::listen_plain(const std::string& host, int port, std::string& why) {
  asio::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(host, ec);
  if (ec) {
    why = "not an IP address: " + host;
    return 0;
  }
  asio::ip::tcp::endpoint ep(ip, static_cast<unsigned short>(port));
  const int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, ep.data(), static_cast<socklen_t>(ep.size())) != 0 || ::listen(fd, 1024) != 0 ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {  // (polled: accept_loop)
    why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return 0;
  }
  sockaddr_storage got{};
  socklen_t len = sizeof got;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
  listen_fd_ = fd;
  return got.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&got)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&got)->sin_port);
}

void RlsDoor::set_serving(bool serving) { serving_.store(serving, std::memory_order_relaxed); }

void RlsDoor::set_token(std::string token) {
  auto t = token.empty() ? nullptr : std::make_shared<const std::string>(std::move(token));
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = std::move(t);
}

void RlsDoor::arm_health() {
  auto* h = new HealthCall;
  if (grpc_server_request_registered_call(server_, health_method_, &h->call, &h->deadline,
                                          &h->metadata, &h->payload, cq_, cq_, h) != GRPC_CALL_OK) {
    delete h;
  }
}

void RlsDoor::arm_other() {
  auto* o = new OtherCall;
  if (grpc_server_request_call(server_, &o->call, &o->details_of, &o->metadata, cq_, cq_, o) !=
      GRPC_CALL_OK) {
    delete o;
  }
}

// "" (the server as a whole) and the rate-limit service: SERVING or NOT_SERVING; any other
// name is unknown, as gRPC's own health service answers.
void RlsDoor::health(HealthCall* h, bool ok) {
  if (!ok || h->finishing) {
    delete h;
    return;
  }
  if (!stopping_.load(std::memory_order_relaxed)) arm_health();
  grpc::health::v1::HealthCheckRequest req;
  if (!h->parse(req)) {
    return h->send(nullptr, GRPC_STATUS_INVALID_ARGUMENT,
                   "the request is not a HealthCheckRequest");
  }
  const std::string& name = req.service();
  if (!name.empty() && name != kRlsService && name != kRlqsService) {
    return h->send(nullptr, GRPC_STATUS_NOT_FOUND, "service name unknown");
  }
  grpc::health::v1::HealthCheckResponse r;
  r.set_status(serving_.load(std::memory_order_relaxed)
                   ? grpc::health::v1::HealthCheckResponse::SERVING
                   : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  h->answer(r);
}

// Any other method (Health/Watch among them): UNIMPLEMENTED, with gRPC's words.
void RlsDoor::other(OtherCall* o, bool ok) {
  if (!ok || o->finishing) {
    delete o;
    return;
  }
  if (!stopping_.load(std::memory_order_relaxed)) arm_other();
  o->send(nullptr, GRPC_STATUS_UNIMPLEMENTED, "");
}

void RlsDoor::set_memory(int64_t bytes) {
  if (bytes <= 0) bytes = kDefaultMemoryBytes;
  std::lock_guard<std::mutex> g(quota_mu_);
  if (!quota_) return;
  grpc_resource_quota_resize(quota_, static_cast<size_t>(bytes));
  rules_.stats().memory_quota.store(bytes, std::memory_order_relaxed);
}

void RlsDoor::release_quota() {
  std::lock_guard<std::mutex> g(quota_mu_);
  if (quota_) grpc_resource_quota_unref(quota_);
  quota_ = nullptr;
}

void RlsDoor::stop() {
  if (!server_) return;
  set_serving(false);
  // New calls refused; those running get half a second, then are cancelled. Their request
  // jobs still answer (into cancelled calls): the server is gone, and the queue shut, only
  // once none is left, as gRPC requires (bounded by the longest a job can wait: a forward's
  // timeout, an awaited slot).
  stopping_.store(true);
  if (acceptor_.joinable()) {
    ::shutdown(listen_fd_, SHUT_RDWR);  // (wakes the acceptor's accept)
    acceptor_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (kill_fd_ >= 0) ::close(kill_fd_);
  listen_fd_ = kill_fd_ = -1;
  static DoorTag shutdown_tag(DoorTag::What::kShutdown);
  grpc_server_shutdown_and_notify(server_, cq_, &shutdown_tag);
  auto wait = [this](std::chrono::milliseconds most) {
    const auto until = std::chrono::steady_clock::now() + most;
    while (!shut_down_.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return shut_down_.load();
  };
  if (!wait(std::chrono::milliseconds(500))) {
    grpc_server_cancel_all_calls(server_);
    if (!wait(std::chrono::seconds(20))) {
      // (a call still held: the server cannot be destroyed under it; the process is ending)
      spdlog::error("gateway door: calls still open 20 s after the shutdown; left");
      return;
    }
  }
  grpc_server_destroy(server_);
  server_ = nullptr;
  grpc_completion_queue_shutdown(cq_);
  thread_.join();
  grpc_completion_queue_destroy(cq_);
  cq_ = nullptr;
  if (plain_creds_) grpc_server_credentials_release(plain_creds_);
  plain_creds_ = nullptr;
  release_quota();
  grpc_shutdown();
}

}  // namespace fg
