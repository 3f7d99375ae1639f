// The native connection's loop: read frames -> NativeSession::process -> (shards) ->
// write answers; topology pushes go out between answers.
#include "native_connection.hpp"

#include <spdlog/spdlog.h>

#include "native_wire.hpp"

namespace fg {

namespace {
constexpr size_t kInitialBuffer = 64 * 1024;
constexpr size_t kMaxBuffer = wire::kMaxFrameBytes + 64 * 1024;
}  // namespace

NativeConnection::NativeConnection(asio::ip::tcp::socket sock,
                                   std::shared_ptr<asio::ssl::context> tls, Services& svc,
                                   ConnectionLimits limits, IoBatcher& batcher)
    : stream_(std::move(sock), std::move(tls)),
      timer_(stream_.socket().get_executor()),
      stall_timer_(stream_.socket().get_executor()),
      svc_(svc),
      limits_(limits),
      batcher_(batcher),
      in_(kInitialBuffer, kMaxBuffer) {}

NativeConnection::~NativeConnection() {
  svc_.counters.connections_closed.fetch_add(1, std::memory_order_relaxed);
  unregister_client(svc_, client_);
}

int64_t NativeConnection::now_ms() const { return connection_now_ms(); }

void NativeConnection::start() { serve_when_secured(shared_from_this(), stream_, svc_, limits_); }

void NativeConnection::serve() {
  client_ = register_client(stream_, svc_);
  if (!client_) {
    // Over --maxclients: close at once; the client library reports the refused connection.
    shut(stream_);
    return;
  }
  svc_.clients->set_lib(*client_, true, "floodgate-native");
  session_ = std::make_unique<NativeSession>(svc_, client_);
  clock_.last_read_ms = now_ms();
  arm_timer();
  maybe_read();
}

void NativeConnection::maybe_read() {
  if (reading_ || closed_ || close_after_write_) return;
  if (!in_.make_room()) return;  // full: processing frees room, then we read
  if (!account()) return;
  reading_ = true;
  auto self = shared_from_this();
  stream_.async_read_some(asio::buffer(in_.space(), in_.space_size()),
                          [self](asio::error_code ec, size_t n) {
                            self->reading_ = false;
                            if (ec) return self->close();
                            self->in_.filled(n);
                            self->clock_.last_read_ms = self->now_ms();
                            IoBatcher::Turn turn(self->batcher_);
                            self->pump();
                          });
}

void NativeConnection::pump() {
  if (closed_) return;
  while (!in_flight_ && !writing_ && !stalled_ && !in_.empty()) {
    NativeProcessResult r = session_->process(in_.data(), in_.size(), batcher_.current());
    in_.consume(r.consumed);  // the session keeps its own copy of what it parsed
    if (r.submitted) {
      in_flight_ = true;
      pending_close_ = r.close;
      batcher_.join(shared_from_this());
      break;
    }
    if (r.close) close_after_write_ = true;
    if (!session_->output().empty() || close_after_write_) {
      if (!write()) break;
      continue;
    }
    if (r.stalled) {
      // A slot moving here: its state arrives within milliseconds (or the wait times out).
      stalled_ = true;
      stall_timer_.expires_after(std::chrono::milliseconds(2));
      stall_timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
        self->stalled_ = false;
        if (!ec && !self->closed_) self->pump();
      });
      break;
    }
    if (r.consumed == 0) break;  // only part of a frame is here
  }
  clock_.input_left(in_.empty(), now_ms());
  maybe_read();
}

void NativeConnection::batch_complete(Flight& flight) {
  in_flight_ = false;
  session_->complete(flight);
  if (pending_close_) close_after_write_ = true;
  if (closed_) return;
  if ((!session_->output().empty() || close_after_write_) && !write()) return;
  pump();
}

bool NativeConnection::write() {
  if (closed_ || writing_) return false;
  asio::error_code ec;
  auto self = shared_from_this();
  if (!write_now(stream_, session_->output(), wbuf_, ec, [self](asio::error_code ec) {
        self->writing_ = false;
        if (ec || self->close_after_write_) return self->close();
        if (!self->session_->output().empty() && !self->in_flight_ && !self->write()) return;
        self->pump();
      })) {
    writing_ = true;  // the socket's buffer is full: the client is slow to read
    clock_.write_since_ms = now_ms();
    account();
    return false;
  }
  if (ec || close_after_write_) {
    close();
    return false;
  }
  return true;
}

bool NativeConnection::account() {
  const auto bytes =
      static_cast<int64_t>(in_.capacity() + session_->output().capacity() + wbuf_.capacity());
  if (account_memory(svc_, *client_, bytes, reported_bytes_, now_ms())) return true;
  close();
  return false;
}

void NativeConnection::close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  stall_timer_.cancel();
  shut(stream_);
}

void NativeConnection::arm_timer() {
  auto self = shared_from_this();
  timer_.expires_after(std::chrono::milliseconds(100));
  timer_.async_wait([self](asio::error_code ec) {
    if (ec || self->closed_) return;
    self->tick();
    if (!self->closed_) self->arm_timer();
  });
}

// Ten times a second: topology pushes, then the same defences as a RESP connection.
void NativeConnection::tick() {
  if (!account()) return;
  if (session_->push_topology_if_changed() && !writing_ && !in_flight_ && write()) pump();
  ConnectionState st;
  st.writing = writing_;
  st.waiting_for_input = !writing_ && !in_flight_;
  st.input_empty = in_.empty();
  const char* why = deadline_breach(limits_, clock_, st, now_ms(), svc_.counters);
  if (!why) return;
  if (*why) spdlog::info("native client {} dropped: {}", client_->addr, why);
  close();
}

}  // namespace fg
