// The connection's loop: read -> Session::process -> (shards) -> write -> read. Only one
// batch is in flight per connection, which keeps pipelined replies in order and bounds
// the output a client that does not read can make the node hold.
#include "connection.hpp"

#include <spdlog/spdlog.h>

#include "errors.hpp"
#include "lease_upkeep.hpp"

namespace fg {

namespace {
constexpr size_t kInitialBuffer = 16 * 1024;
}  // namespace

Connection::Connection(asio::ip::tcp::socket sock, std::shared_ptr<asio::ssl::context> tls,
                       Services& svc, ConnectionLimits limits, IoBatcher& batcher)
    : stream_(std::move(sock), std::move(tls)),
      watchdog_(stream_.socket().get_executor()),
      stall_timer_(stream_.socket().get_executor()),
      svc_(svc),
      limits_(limits),
      batcher_(batcher),
      in_(kInitialBuffer, limits.max_query_bytes) {}

Connection::~Connection() {
  svc_.counters.connections_closed.fetch_add(1, std::memory_order_relaxed);
  unregister_client(svc_, client_);
  if (session_) release_watches(svc_, session_->take_watched());
}

int64_t Connection::now_ms() const { return connection_now_ms(); }

void Connection::start() { serve_when_secured(shared_from_this(), stream_, svc_, limits_); }

void Connection::serve() {
  client_ = register_client(stream_, svc_);
  if (!client_) {
    // Over --maxclients: say so, then close. The write keeps `self` alive.
    std::string out;
    RespWriter(out, 2).error(err::kMaxClients);
    write_out(stream_, out, wbuf_,
              [self = shared_from_this()](asio::error_code) { shut(self->stream_); });
    return;
  }
  session_ = std::make_unique<RespSession>(svc_, client_);
  svc_.clients->set_wake(*client_, [weak = std::weak_ptr<Connection>(shared_from_this()),
                                    ex = stream_.socket().get_executor()] {
    asio::post(ex, [weak] {
      if (auto self = weak.lock(); self && self->state_ != State::kClosed) self->account();
    });
  });
  clock_.last_read_ms = now_ms();
  arm_watchdog();
  read();
}

void Connection::read() {
  if (state_ == State::kClosed) return;
  state_ = State::kReading;
  if (!in_.make_room()) {  // one command larger than max-query-bytes
    RespWriter(session_->output(), session_->proto()).error(err::kQueryBufferLimit);
    svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
    close_after_write_ = true;
    write();
    return;
  }
  if (!account()) return;
  auto self = shared_from_this();
  stream_.async_read_some(asio::buffer(in_.space(), in_.space_size()),
                          [self](asio::error_code ec, size_t n) {
                            if (ec) return self->close();
                            self->in_.filled(n);
                            self->clock_.last_read_ms = self->now_ms();
                            IoBatcher::Turn turn(self->batcher_);
                            self->pump();
                          });
}

void Connection::pump() {
  while (state_ != State::kClosed) {
    if (in_.empty()) break;
    ProcessResult r = session_->process(in_.data(), in_.size(), batcher_.current());
    if (r.submitted) {
      // Our ops ride in this turn's batch; the replies come back through batch_complete().
      state_ = State::kInFlight;
      pending_consumed_ = r.consumed;
      pending_close_ = r.close;
      batcher_.join(shared_from_this());
      return;
    }
    in_.consume(r.consumed);
    if (r.close) close_after_write_ = true;
    if (!session_->output().empty() || close_after_write_) {
      if (!write()) return;
      continue;
    }
    if (r.stalled) {
      // A slot moving here: its state arrives within milliseconds (or the wait times out).
      state_ = State::kInFlight;
      auto self = shared_from_this();
      stall_timer_.expires_after(std::chrono::milliseconds(2));
      stall_timer_.async_wait([self](asio::error_code ec) {
        if (ec || self->state_ == State::kClosed) return;
        self->state_ = State::kReading;
        self->pump();
      });
      return;
    }
    if (r.consumed == 0) break;  // only part of a command is here
  }
  clock_.input_left(in_.empty(), now_ms());
  read();
}

void Connection::batch_complete(Flight& flight) {
  session_->complete(flight);
  if (session_->evicted()) {
    svc_.clients->count_eviction();
    spdlog::info(
        "client {} evicted: its replies outgrew what maxmemory-clients ({} bytes) and "
        "client-output-buffer-limit ({} bytes) left them",
        client_->addr, svc_.clients->max_memory(), svc_.settings.output_limits.normal.hard_bytes);
    return close();
  }
  after_batch(pending_consumed_, pending_close_);
}

void Connection::after_batch(size_t consumed, bool close) {
  in_.consume(consumed);
  if (close) close_after_write_ = true;
  if (state_ == State::kClosed) return;
  if ((!session_->output().empty() || close_after_write_) && !write()) return;
  pump();
}

bool Connection::write() {
  if (state_ == State::kClosed) return false;
  asio::error_code ec;
  auto self = shared_from_this();
  if (!write_now(stream_, session_->output(), wbuf_, ec, [self](asio::error_code ec) {
        if (ec || self->close_after_write_) return self->close();
        self->pump();
      })) {
    state_ = State::kWriting;  // the socket's buffer is full: the client is slow to read
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

bool Connection::account() {
  const auto bytes =
      static_cast<int64_t>(in_.capacity() + session_->output().capacity() + wbuf_.capacity()) +
      session_->held_bytes();
  if (account_memory(svc_, *client_, bytes, reported_bytes_, now_ms())) return true;
  close();
  return false;
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  watchdog_.cancel();
  stall_timer_.cancel();
  shut(stream_);
}

void Connection::arm_watchdog() {
  auto self = shared_from_this();
  watchdog_.expires_after(std::chrono::seconds(1));
  watchdog_.async_wait([self](asio::error_code ec) {
    if (ec || self->state_ == State::kClosed) return;
    self->check_deadlines();
    if (self->state_ != State::kClosed) self->arm_watchdog();
  });
}

// Once a second: drop slowloris senders, silent idlers and clients that stopped reading.
void Connection::check_deadlines() {
  if (!account()) return;
  ConnectionState st;
  st.writing = state_ == State::kWriting;
  st.waiting_for_input = state_ == State::kReading;
  st.input_empty = in_.empty();
  const char* why = deadline_breach(limits_, clock_, st, now_ms(), svc_.counters);
  if (!why) why = output_breach();
  if (!why) return;
  if (*why) spdlog::info("client {} dropped: {}", client_->addr, why);
  close();
}

// client-output-buffer-limit's soft limit (and its hard one, for output that piled up
// while the client did not read): why the client goes, or null.
const char* Connection::output_breach() {
  const OutputLimit& l = svc_.settings.output_limits.normal;
  const auto pending = static_cast<int64_t>(session_->output().size() + wbuf_.size());
  const int64_t now = now_ms();
  if (l.hard_bytes > 0 && pending > l.hard_bytes) {
    svc_.counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
    return "its replies passed client-output-buffer-limit's hard limit";
  }
  if (l.soft_bytes == 0 || pending <= l.soft_bytes) {
    over_soft_since_ms_ = 0;
    return nullptr;
  }
  if (over_soft_since_ms_ == 0) over_soft_since_ms_ = now;
  if (now - over_soft_since_ms_ < l.soft_s * 1000) return nullptr;
  svc_.counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
  return "its replies stayed past client-output-buffer-limit's soft limit";
}

}  // namespace fg
