// The native connection's loop: read frames -> NativeSession::process -> (shards) ->
// write answers; topology pushes go out between answers.
#include "native_connection.hpp"

#include <spdlog/spdlog.h>

#include "native_wire.hpp"

namespace fg {

namespace {
constexpr size_t kInitialBuffer = 64 * 1024;
constexpr size_t kMaxBuffer = wire::kMaxFrameBytes + 64 * 1024;
std::string endpoint_str(const asio::ip::tcp::endpoint& e) {
  return e.address().to_string() + ":" + std::to_string(e.port());
}
}  // namespace

NativeConnection::NativeConnection(asio::ip::tcp::socket sock, Services& svc,
                                   ConnectionLimits limits, IoBatcher& batcher)
    : sock_(std::move(sock)),
      timer_(sock_.get_executor()),
      stall_timer_(sock_.get_executor()),
      svc_(svc),
      limits_(limits),
      batcher_(batcher),
      in_(kInitialBuffer) {}

NativeConnection::~NativeConnection() {
  svc_.counters.connections_closed.fetch_add(1, std::memory_order_relaxed);
  session_.reset();  // gives back the connection's bound leases
  if (client_) svc_.clients->remove(client_->id);
}

int64_t NativeConnection::now_ms() const { return svc_.clock->now_ns() / 1'000'000; }

void NativeConnection::start() {
  asio::error_code ec;
  sock_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto remote = sock_.remote_endpoint(ec);
  auto local = sock_.local_endpoint(ec);
  client_ = svc_.clients->add(endpoint_str(remote), endpoint_str(local), now_ms());
  if (!client_) {
    // Over --maxclients: close at once; the client library reports the refused connection.
    sock_.close(ec);
    return;
  }
  svc_.clients->set_lib(*client_, true, "floodgate-native");
  session_ = std::make_unique<NativeSession>(svc_, client_);
  last_read_ms_ = now_ms();
  arm_timer();
  maybe_read();
}

void NativeConnection::maybe_read() {
  if (reading_ || closed_ || close_after_write_) return;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    // A big command is done: give its buffer back rather than keep it for the connection's life.
    if (in_.size() > 4 * kInitialBuffer) std::vector<char>(kInitialBuffer).swap(in_);
  }
  if (in_.size() - end_ < 4096) {
    if (begin_ > 0) {
      std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (in_.size() - end_ < 4096) {
      if (in_.size() >= kMaxBuffer) return;  // full: processing frees room, then we read
      in_.resize(std::min(in_.size() * 2, kMaxBuffer));
    }
  }
  reading_ = true;
  auto self = shared_from_this();
  sock_.async_read_some(asio::buffer(in_.data() + end_, in_.size() - end_),
                        [self](asio::error_code ec, size_t n) {
                          self->reading_ = false;
                          if (ec) return self->close();
                          self->end_ += n;
                          self->last_read_ms_ = self->now_ms();
                          self->pump();
                        });
}

void NativeConnection::pump() {
  if (closed_) return;
  while (!in_flight_ && !writing_ && !stalled_ && begin_ < end_) {
    NativeProcessResult r =
        session_->process(in_.data() + begin_, end_ - begin_, batcher_.current());
    begin_ += r.consumed;  // the session keeps its own copy of what it parsed
    if (r.submitted) {
      in_flight_ = true;
      pending_close_ = r.close;
      batcher_.join(shared_from_this());
      break;
    }
    if (r.close) close_after_write_ = true;
    if (!session_->output().empty() || close_after_write_) {
      write();
      break;
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
  if (begin_ == end_) {
    partial_since_ms_ = 0;
  } else if (partial_since_ms_ == 0) {
    partial_since_ms_ = now_ms();
  }
  maybe_read();
}

void NativeConnection::batch_complete(Flight& flight) {
  in_flight_ = false;
  session_->complete(flight);
  if (pending_close_) close_after_write_ = true;
  if (closed_) return;
  if (!session_->output().empty() || close_after_write_) return write();
  pump();
}

void NativeConnection::write() {
  if (closed_ || writing_) return;
  writing_ = true;
  write_since_ms_ = now_ms();
  wbuf_.clear();
  wbuf_.swap(session_->output());
  auto self = shared_from_this();
  asio::async_write(sock_, asio::buffer(wbuf_), [self](asio::error_code ec, size_t) {
    self->writing_ = false;
    if (ec || self->close_after_write_) return self->close();
    if (self->wbuf_.capacity() > (1 << 20)) std::string().swap(self->wbuf_);
    if (!self->session_->output().empty() && !self->in_flight_) return self->write();
    self->pump();
  });
}

void NativeConnection::close() {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  timer_.cancel();
  stall_timer_.cancel();
  sock_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  sock_.close(ec);
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
  if (session_->push_topology_if_changed() && !writing_ && !in_flight_) write();
  ConnectionClock c;
  c.writing = writing_;
  c.write_since_ms = write_since_ms_;
  c.waiting_for_input = !writing_ && !in_flight_;
  c.partial_since_ms = partial_since_ms_;
  c.input_empty = begin_ == end_;
  c.last_read_ms = last_read_ms_;
  const char* why = deadline_breach(limits_, c, now_ms(), svc_.counters);
  if (!why) return;
  if (*why) spdlog::info("native client {} dropped: {}", client_->addr, why);
  close();
}

}  // namespace fg
