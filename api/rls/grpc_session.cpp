// The gateway door's connection: HTTP/2 (nghttp2, its session fed from the shell's input and
// read into the shell's output, never a socket of its own) and gRPC's framing — streams
// begun, their headers bounded and checked, their messages cut out, answers and trailers
// written, the connection's deadlines. What a method does is grpc_calls.cpp's and
// rlqs_streams.cpp's.
#include "grpc_session.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "grpc_conn.hpp"
#include "io_batcher.hpp"

namespace fg {

namespace {

using Conn = GrpcSession::Conn;

constexpr char kRlsMethod[] = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
constexpr char kHealthMethod[] = "/grpc.health.v1.Health/Check";
constexpr char kRlqsMethod[] =
    "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas";
// A connection whose streams keep failing the header bound is a flood, not a gateway.
constexpr int kMaxHeaderRefusals = 100;

// nghttp2's allocations, counted per connection (held_bytes: maxmemory-clients). Each block
// carries its size in front (16 bytes, to keep malloc's alignment).
constexpr size_t kHead = 16;
void* h2_malloc(size_t n, void* ud) {
  auto* p = static_cast<char*>(std::malloc(n + kHead));
  if (!p) return nullptr;
  std::memcpy(p, &n, sizeof n);
  *static_cast<int64_t*>(ud) += static_cast<int64_t>(n);
  return p + kHead;
}
void h2_free(void* ptr, void* ud) {
  if (!ptr) return;
  char* p = static_cast<char*>(ptr) - kHead;
  size_t n;
  std::memcpy(&n, p, sizeof n);
  *static_cast<int64_t*>(ud) -= static_cast<int64_t>(n);
  std::free(p);
}
void* h2_calloc(size_t count, size_t size, void* ud) {
  if (size != 0 && count > std::numeric_limits<size_t>::max() / size) return nullptr;
  void* p = h2_malloc(count * size, ud);
  if (p) std::memset(p, 0, count * size);
  return p;
}
void* h2_realloc(void* ptr, size_t n, void* ud) {
  if (!ptr) return h2_malloc(n, ud);
  if (n == 0) {
    h2_free(ptr, ud);
    return nullptr;
  }
  char* p = static_cast<char*>(ptr) - kHead;
  size_t old;
  std::memcpy(&old, p, sizeof old);
  auto* q = static_cast<char*>(std::realloc(p, n + kHead));
  if (!q) return nullptr;
  std::memcpy(q, &n, sizeof n);
  *static_cast<int64_t*>(ud) += static_cast<int64_t>(n) - static_cast<int64_t>(old);
  return q + kHead;
}

nghttp2_nv header(std::string_view name, std::string_view value) {
  nghttp2_nv nv;
  nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = NGHTTP2_NV_FLAG_NONE;  // (nghttp2 copies them)
  return nv;
}

// grpc-message: percent-encoded, as gRPC's wire spec asks (bytes outside 0x20-0x7E and '%').
std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : text) {
    if (ch < 0x20 || ch > 0x7e || ch == '%') {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

}  // namespace

std::string grpc_frame(const google::protobuf::MessageLite& m) {
  const size_t n = m.ByteSizeLong();
  std::string out(5 + n, '\0');
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  m.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data()) + 5);
  return out;
}

namespace {

void send_trailers(Conn& c, GrpcStream& s) {
  const std::string code = std::to_string(static_cast<int>(s.status));
  const std::string text = percent_encoded(s.status_text);
  nghttp2_nv nv[2] = {header("grpc-status", code), header("grpc-message", text)};
  nghttp2_submit_trailer(c.h2, s.id, nv, s.status_text.empty() ? 1 : 2);
}

// The answer's body, as nghttp2 asks for it (as far as the gateway's window lets it): the
// framed messages, then (once the call is finished) the trailers. A stream that stays open
// with nothing to send is deferred until there is.
ssize_t read_body(nghttp2_session*, int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                  nghttp2_data_source*, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  const std::shared_ptr<GrpcStream> s = c.find(id);
  if (!s) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  if (s->quota && s->out_pos == s->out.size()) rlqs_write_pending(c, *s);
  const size_t n = std::min(length, s->out.size() - s->out_pos);
  std::memcpy(buf, s->out.data() + s->out_pos, n);
  s->out_pos += n;
  if (s->out_pos == s->out.size()) {
    s->out.clear();
    s->out_pos = 0;
    if (s->out.capacity() > 64 * 1024) s->out.shrink_to_fit();
    if (s->finish) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      send_trailers(c, *s);
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

void start_response(Conn& c, GrpcStream& s) {
  s.response_started = true;
  nghttp2_nv nv[2] = {header(":status", "200"), header("content-type", "application/grpc")};
  nghttp2_data_provider dp{};
  dp.read_callback = read_body;
  nghttp2_submit_response(c.h2, s.id, nv, 2, &dp);
}

// An answer that is no gRPC (not a POST, not gRPC's content type): the HTTP status alone.
void http_refuse(Conn& c, GrpcStream& s, const char* status) {
  s.answered = true;
  s.response_started = true;
  nghttp2_nv nv[1] = {header(":status", status)};
  nghttp2_submit_response(c.h2, s.id, nv, 1, nullptr);
}

GrpcStream::Method method_of(std::string_view path) {
  if (path == kRlsMethod) return GrpcStream::Method::kRls;
  if (path == kHealthMethod) return GrpcStream::Method::kHealth;
  if (path == kRlqsMethod) return GrpcStream::Method::kRlqs;
  return GrpcStream::Method::kOther;
}

// A stream's request headers are whole: what it is, and whether it may go on.
void headers_done(Conn& c, GrpcStream& s) {
  s.headers_done = true;
  if (s.http_method != "POST") return http_refuse(c, s, "405");
  if (s.content_type.rfind("application/grpc", 0) != 0) return http_refuse(c, s, "415");
  s.method = method_of(s.path);
  using M = GrpcStream::Method;
  if (s.method == M::kOther) return grpc_fail(c, s, GrpcCode::kUnimplemented, "");
  if (!s.encoding.empty() && s.encoding != "identity") {
    return grpc_fail(c, s, GrpcCode::kUnimplemented,
                     "grpc-encoding " + s.encoding + " is not supported: send identity");
  }
  if (s.method != M::kHealth && !grpc_token_ok(c, s)) {
    // A caller without the token gets nothing further from this connection: its other
    // streams are not read, and the connection goes once this is written.
    c.door.rules().stats().unauthenticated.fetch_add(1, std::memory_order_relaxed);
    grpc_fail(c, s, GrpcCode::kUnauthenticated,
              "this gateway door wants authorization: Bearer <its rls-token-file's token>");
    nghttp2_submit_goaway(c.h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c.h2),
                          NGHTTP2_NO_ERROR, nullptr, 0);
    c.dead = true;
    return;
  }
  if (s.method == M::kRlqs) {
    if (c.quota_streams >= kGrpcMaxQuotaStreams) {
      return grpc_fail(c, s, GrpcCode::kResourceExhausted,
                       "a connection may hold at most " + std::to_string(kGrpcMaxQuotaStreams) +
                           " quota streams");
    }
    rlqs_begin(c, s);
  }
}

// The request's whole message (a unary call), or an empty one when it sent none.
bool take_message(Conn& c, GrpcStream& s, std::string_view& msg) {
  if (s.body.empty()) {
    msg = {};
    return true;
  }
  if (s.body.size() < 5) {
    grpc_fail(c, s, GrpcCode::kInternal, "the request ended inside a message's length prefix");
    return false;
  }
  const auto* b = reinterpret_cast<const unsigned char*>(s.body.data());
  const size_t len = size_t{b[1]} << 24 | size_t{b[2]} << 16 | size_t{b[3]} << 8 | b[4];
  if (s.body.size() < 5 + len) {
    grpc_fail(c, s, GrpcCode::kInternal, "the request ended inside a message");
    return false;
  }
  msg = std::string_view(s.body).substr(5, len);
  return true;
}

void request_done(Conn& c, const std::shared_ptr<GrpcStream>& s) {
  s->request_done = true;
  if (s->answered || !s->headers_done) return;
  using M = GrpcStream::Method;
  if (s->method == M::kRlqs) {  // the gateway is done reporting: so are we
    return grpc_fail(c, *s, GrpcCode::kOk, "");
  }
  std::string_view msg;
  if (!take_message(c, *s, msg)) return;
  if (s->method == M::kHealth) return health_call(c, *s);
  if (s->method != M::kRls) return;
  s->call = std::make_unique<RlsCallState>();
  s->call->response = &s->response;
  s->call->caller = grpc_caller(c);
  if (!s->call->request.ParseFromArray(msg.data(), static_cast<int>(msg.size()))) {
    c.door.rules().stats().invalid.fetch_add(1, std::memory_order_relaxed);
    return grpc_fail(c, *s, GrpcCode::kInvalidArgument, "the request is not a RateLimitRequest");
  }
  s->body.clear();
  s->body.shrink_to_fit();
  rls_call(c, s);
}

// ---- nghttp2's callbacks (user data: the Conn) ----

int on_begin_headers(nghttp2_session*, const nghttp2_frame* f, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  auto s = std::make_shared<GrpcStream>();
  s->id = f->hd.stream_id;
  s->started_ns = grpc_now_ns();
  c.streams[s->id] = std::move(s);
  return 0;
}

int on_header(nghttp2_session* h2, const nghttp2_frame* f, const uint8_t* name, size_t namelen,
              const uint8_t* value, size_t valuelen, uint8_t, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  const std::shared_ptr<GrpcStream> s = c.find(f->hd.stream_id);
  if (!s) return 0;
  s->header_bytes += namelen + valuelen + 32;
  if (s->header_bytes > kGrpcMaxHeaderBytes) {
    if (++c.header_refusals > kMaxHeaderRefusals) {
      nghttp2_session_terminate_session(h2, NGHTTP2_ENHANCE_YOUR_CALM);
      c.dead = true;
    }
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // (the stream is reset)
  }
  if (f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // (trailers: counted, not read)
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":path") {
    s->path = v;
  } else if (n == ":method") {
    s->http_method = v;
  } else if (n == "content-type") {
    s->content_type = v;
  } else if (n == "authorization") {
    s->authorization = v;
  } else if (n == "grpc-encoding") {
    s->encoding = v;
  }
  return 0;
}

int on_frame_recv(nghttp2_session*, const nghttp2_frame* f, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  c.preface = true;
  const std::shared_ptr<GrpcStream> s = f->hd.stream_id ? c.find(f->hd.stream_id) : nullptr;
  if (!s) return 0;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST &&
      (f->hd.flags & NGHTTP2_FLAG_END_HEADERS)) {
    headers_done(c, *s);
  }
  if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
      (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    request_done(c, s);
  }
  return 0;
}

int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  const std::shared_ptr<GrpcStream> s = c.find(id);
  if (!s || !s->headers_done || s->answered) return 0;  // (nghttp2 still counts the window)
  s->body.append(reinterpret_cast<const char*>(data), len);
  // Each whole message as it comes: the quota service's at once; a unary call's when its
  // request ends. None past 1 MiB, and none compressed (the door announces no encoding).
  while (s->body.size() >= 5 && !s->answered) {
    const auto* b = reinterpret_cast<const unsigned char*>(s->body.data());
    const size_t n = size_t{b[1]} << 24 | size_t{b[2]} << 16 | size_t{b[3]} << 8 | b[4];
    if (b[0] != 0) {
      grpc_fail(c, *s, GrpcCode::kUnimplemented,
                "compressed messages are not supported: send grpc-encoding identity");
      return 0;
    }
    if (n > kGrpcMaxMessageBytes) {
      grpc_fail(c, *s, GrpcCode::kResourceExhausted,
                "Received message larger than max (" + std::to_string(n) + " vs. " +
                    std::to_string(kGrpcMaxMessageBytes) + ")");
      return 0;
    }
    if (s->method != GrpcStream::Method::kRlqs || s->body.size() < 5 + n) break;
    const std::string msg = s->body.substr(5, n);
    s->body.erase(0, 5 + n);
    rlqs_message(c, s, msg);
  }
  return 0;
}

// An answer's last frame went out while the caller still sends: RST_STREAM(NO_ERROR) tells
// it to stop (as gRPC servers do), so nothing more of that call is read. (Sent after the
// answer: submitted before it, nghttp2 would send the reset first and drop the answer.)
int on_frame_send(nghttp2_session* h2, const nghttp2_frame* f, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  const std::shared_ptr<GrpcStream> s = c.find(f->hd.stream_id);
  if (s && !s->request_done) {
    nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

int on_stream_close(nghttp2_session*, int32_t id, uint32_t, void* ud) {
  Conn& c = *static_cast<Conn*>(ud);
  auto it = c.streams.find(id);
  if (it == c.streams.end()) return 0;
  GrpcStream& s = *it->second;
  s.closed = true;
  if (s.quota) rlqs_closed(c, s);
  c.streams.erase(it);
  c.last_active_ns = grpc_now_ns();
  return 0;
}

Lane& lane_of_this_thread(Services& svc) {
  for (Lane& l : svc.lanes)
    if (l.io && l.io->get_executor().running_in_this_thread()) return l;
  return svc.lanes.front();
}

}  // namespace

std::string grpc_caller(const Conn& c) {
  const std::string& a = c.client->addr;
  return a.substr(0, a.rfind(':'));  // (the address without its port)
}

int64_t grpc_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool grpc_token_ok(Conn& c, const GrpcStream& s) {
  const auto token = c.door.token();
  if (!token) return true;
  const std::string want = "Bearer " + *token;
  return s.authorization.size() == want.size() &&
         CRYPTO_memcmp(s.authorization.data(), want.data(), want.size()) == 0;
}

void grpc_answer(Conn& c, GrpcStream& s, const google::protobuf::MessageLite& m) {
  if (s.answered) return;
  s.answered = true;
  s.out += grpc_frame(m);
  s.finish = true;
  s.status = GrpcCode::kOk;
  if (!s.response_started) {
    start_response(c, s);
  } else {
    nghttp2_session_resume_data(c.h2, s.id);
  }
}

void grpc_send(Conn& c, GrpcStream& s, const google::protobuf::MessageLite& m) {
  if (s.answered) return;
  s.out += grpc_frame(m);
  if (!s.response_started) {
    start_response(c, s);
  } else {
    nghttp2_session_resume_data(c.h2, s.id);
  }
}

void grpc_open(Conn& c, GrpcStream& s) {
  if (!s.response_started) start_response(c, s);
}

void grpc_fail(Conn& c, GrpcStream& s, GrpcCode code, std::string_view text) {
  if (s.answered) return;
  s.answered = true;
  s.status = code;
  s.status_text = text;
  s.body.clear();
  s.body.shrink_to_fit();
  if (s.response_started) {  // (the body so far, then the trailers)
    s.finish = true;
    nghttp2_session_resume_data(c.h2, s.id);
  } else {  // trailers only
    s.response_started = true;
    const std::string status = std::to_string(static_cast<int>(code));
    const std::string message = percent_encoded(text);
    nghttp2_nv nv[4] = {header(":status", "200"), header("content-type", "application/grpc"),
                        header("grpc-status", status), header("grpc-message", message)};
    nghttp2_submit_response(c.h2, s.id, nv, text.empty() ? 3 : 4, nullptr);
  }
}

void grpc_answers_ready(Conn& c) {
  if (c.in_process) return;  // (process() writes them as it ends)
  c.flush_wanted = true;
  if (c.wake) c.wake();
}

Conn::Conn(Services& s, GatewayDoor& d, Lane& l, std::shared_ptr<ClientInfo> cl)
    : svc(s),
      door(d),
      parts(d.lane(static_cast<size_t>(&l - s.lanes.data()))),
      lane(l),
      client(std::move(cl)) {
  opened_ns = last_active_ns = grpc_now_ns();
}

Conn::~Conn() {
  if (h2) nghttp2_session_del(h2);
}

int64_t Conn::held_bytes() const {
  int64_t n = h2_bytes;
  for (const auto& [id, s] : streams) {
    n += static_cast<int64_t>(sizeof(GrpcStream) + s->body.capacity() + s->out.capacity() +
                              s->path.capacity() + s->authorization.capacity());
    if (s->call) n += static_cast<int64_t>(s->call->request.SpaceUsedLong());
    if (s->quota) {
      n += static_cast<int64_t>(s->quota->pending_bytes);
      for (const auto& [name, h] : s->quota->stream.holders)
        n += static_cast<int64_t>(2 * name.size() + h.key.size() + sizeof(RlqsHolder));
    }
  }
  return n;
}

GrpcSession::GrpcSession(Services& svc, std::shared_ptr<ClientInfo> client) {
  c_ = std::make_shared<Conn>(svc, *svc.gateway, lane_of_this_thread(svc), std::move(client));
  Conn& c = *c_;
  c.next_look_ns = c.opened_ns + c.door.options().handshake_ms * 1'000'000;  // (its preface)
  admitted_ = c.door.admit();
  if (!admitted_) c.dead = true;  // (past rls-maxclients: closed at its first turn)
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  // The floods Debian's nghttp2 holds: RST_STREAM (rapid reset: GOAWAY past a burst of 1000
  // and 33 a second), CONTINUATION (8 frames a header block), SETTINGS and PING answers not
  // read (1000), SETTINGS entries (32 a frame).
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
  nghttp2_option_set_max_continuations(opt, 8);
  nghttp2_option_set_max_outbound_ack(opt, 1000);
  nghttp2_option_set_max_settings(opt, 32);
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
  nghttp2_mem mem{&c.h2_bytes, h2_malloc, h2_free, h2_calloc, h2_realloc};
  nghttp2_session_server_new3(&c.h2, cbs, &c, opt, &mem);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (c.dead) return;  // (refused: nothing is said, the connection closes at its first turn)
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
       static_cast<uint32_t>(std::max(1, c.door.options().max_streams))},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kGrpcMaxHeaderBytes)},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  nghttp2_submit_settings(c.h2, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  // The server's preface goes first, at once (gRPC's clients wait for it before they speak).
  take_pushes(0);
}

GrpcSession::~GrpcSession() {
  closing();
  if (admitted_) c_->door.left();
}

// A turn when something is due (a deadline, a slice, answers to write) or it is closing:
// the shell then calls process(), which looks at everything.
bool GrpcSession::tick() { return c_->dead || wants_turn(); }

void GrpcSession::closing() {
  Conn& c = *c_;
  if (c.dead && c.streams.empty()) return;
  c.dead = true;
  for (auto& [id, s] : c.streams) {
    s->closed = true;
    if (s->quota) rlqs_closed(c, *s);
  }
  c.streams.clear();
  c.ready.clear();
  c.wake = nullptr;
}

void GrpcSession::set_push_wake(std::function<void()> wake) { c_->wake = std::move(wake); }

int64_t GrpcSession::held_bytes() const { return c_->held_bytes(); }

const OutputLimit& GrpcSession::output_limit() const {
  return c_->svc.settings.output_limits.normal;
}

bool GrpcSession::wants_turn() const {
  return c_->flush_wanted || (c_->next_look_ns != 0 && c_->next_look_ns <= grpc_now_ns());
}

Pushes GrpcSession::take_pushes(size_t unsent) {
  Conn& c = *c_;
  c.flush_wanted = false;
  const size_t before = out_.size();
  while (out_.size() + unsent < kGrpcOutputHigh) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(c.h2, &data);
    if (n <= 0) {
      if (n < 0) c.dead = true;
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return out_.size() > before ? Pushes::kSome : Pushes::kNone;
}

ProcessResult GrpcSession::process(const char* data, size_t len, Flight&) {
  Conn& c = *c_;
  ProcessResult r;
  r.consumed = len;
  const int64_t now = grpc_now_ns();
  c.in_process = true;
  {
    IoBatcher::Turn turn(*c.lane.batcher);  // (the calls' jobs leave together, in place)
    if (len > 0 && !c.dead) {
      const ssize_t n = nghttp2_session_mem_recv(c.h2, reinterpret_cast<const uint8_t*>(data), len);
      if (n < 0) {
        // Not HTTP/2, or a flood nghttp2 stopped: its GOAWAY (if any) goes, then the close.
        c.door.rules().stats().protocol_errors.fetch_add(1, std::memory_order_relaxed);
        spdlog::debug("gateway {}: {}", c.client->addr, nghttp2_strerror(static_cast<int>(n)));
        c.dead = true;
      }
      c.last_active_ns = now;
    }
    if (!c.dead) rls_run_ready(c);
  }
  // Deadlines: the preface, each call's request, the connection's idleness.
  const auto& o = c.door.options();
  const int64_t begin_ns = o.handshake_ms * 1'000'000;
  int64_t next_ns = now + 60'000'000'000;
  if (!c.preface) {
    if (now - c.opened_ns >= begin_ns) {
      c.door.rules().stats().handshake_timeouts.fetch_add(1, std::memory_order_relaxed);
      c.dead = true;
    }
    next_ns = std::min(next_ns, c.opened_ns + begin_ns);
  }
  for (auto& [id, s] : c.streams) {
    if (s->request_done || s->method == GrpcStream::Method::kRlqs) continue;
    if (now - s->started_ns >= begin_ns) {
      nghttp2_submit_rst_stream(c.h2, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    } else {
      next_ns = std::min(next_ns, s->started_ns + begin_ns);
    }
  }
  if (o.idle_ms > 0 && c.streams.empty() && c.preface && !c.dead) {
    const int64_t idle_until = c.last_active_ns + o.idle_ms * 1'000'000;
    if (now >= idle_until) {
      nghttp2_submit_goaway(c.h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c.h2),
                            NGHTTP2_NO_ERROR, nullptr, 0);
      c.dead = true;
    }
    next_ns = std::min(next_ns, idle_until);
  }
  if (!c.dead) {
    c.in_process = true;
    const int64_t due = rlqs_turn(c);  // (clock ns, or INT64_MAX)
    if (due != std::numeric_limits<int64_t>::max()) {
      const int64_t wait = std::max<int64_t>(0, due - c.svc.clock->now_ns());
      next_ns = std::min(next_ns, now + wait);
    }
  }
  c.in_process = false;
  c.next_look_ns = next_ns;
  take_pushes(0);
  if (c.dead || (!nghttp2_session_want_read(c.h2) && !nghttp2_session_want_write(c.h2))) {
    r.close = true;
  }
  r.retry_ms = std::max<int64_t>(1, (next_ns - now + 999'999) / 1'000'000);
  return r;
}

}  // namespace fg
