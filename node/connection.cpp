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
std::string endpoint_str(const asio::ip::tcp::endpoint& e) {
  return e.address().to_string() + ":" + std::to_string(e.port());
}
}  // namespace

Connection::Connection(asio::ip::tcp::socket sock, Services& svc, ConnectionLimits limits,
                       IoBatcher& batcher)
    : sock_(std::move(sock)),
      watchdog_(sock_.get_executor()),
      stall_timer_(sock_.get_executor()),
      svc_(svc),
      limits_(limits),
      batcher_(batcher),
      in_(kInitialBuffer) {}

Connection::~Connection() {
  svc_.counters.connections_closed.fetch_add(1, std::memory_order_relaxed);
  if (!client_) return;
  svc_.clients->remove(client_->id);
  // Leases this connection took with BOUND go back now, wherever they live.
  release_bound_leases(svc_, client_->id);
}

int64_t Connection::now_ms() const { return svc_.clock->now_ns() / 1'000'000; }

void Connection::start() {
  asio::error_code ec;
  sock_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto remote = sock_.remote_endpoint(ec);
  auto local = sock_.local_endpoint(ec);
  client_ = svc_.clients->add(endpoint_str(remote), endpoint_str(local), now_ms());
  if (!client_) {
    // Over --maxclients: say so, then close. The write keeps `self` alive.
    auto self = shared_from_this();
    wbuf_ = std::string("-") + err::kMaxClients + "\r\n";
    asio::async_write(sock_, asio::buffer(wbuf_), [self](asio::error_code, size_t) {
      asio::error_code ignored;
      self->sock_.close(ignored);
    });
    return;
  }
  session_ = std::make_unique<RespSession>(svc_, client_);
  last_read_ms_ = now_ms();
  arm_watchdog();
  read();
}

void Connection::read() {
  if (state_ == State::kClosed) return;
  state_ = State::kReading;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    // A big command is done: give its buffer back rather than keep it for the connection's life.
    if (in_.size() > 4 * kInitialBuffer) std::vector<char>(kInitialBuffer).swap(in_);
  }
  if (in_.size() - end_ < 4096) {
    if (begin_ > 0) {  // make room by moving the unconsumed tail to the front
      std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (in_.size() - end_ < 4096) {
      if (in_.size() >= limits_.max_query_bytes) {
        RespWriter(session_->output(), session_->proto()).error(err::kQueryBufferLimit);
        svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
        close_after_write_ = true;
        write();
        return;
      }
      in_.resize(std::min(in_.size() * 2, limits_.max_query_bytes));
    }
  }
  auto self = shared_from_this();
  sock_.async_read_some(asio::buffer(in_.data() + end_, in_.size() - end_),
                        [self](asio::error_code ec, size_t n) {
                          if (ec) return self->close();
                          self->end_ += n;
                          self->last_read_ms_ = self->now_ms();
                          self->pump();
                        });
}

void Connection::pump() {
  while (state_ != State::kClosed) {
    if (begin_ == end_) break;
    ProcessResult r = session_->process(in_.data() + begin_, end_ - begin_, batcher_.current());
    if (r.submitted) {
      // Our ops ride in this turn's batch; the replies come back through batch_complete().
      state_ = State::kInFlight;
      pending_consumed_ = r.consumed;
      pending_close_ = r.close;
      batcher_.join(shared_from_this());
      return;
    }
    begin_ += r.consumed;
    if (r.close) close_after_write_ = true;
    if (!session_->output().empty() || close_after_write_) return write();
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
  if (begin_ == end_) {
    partial_since_ms_ = 0;
  } else if (partial_since_ms_ == 0) {
    partial_since_ms_ = now_ms();
  }
  read();
}

void Connection::batch_complete(Flight& flight) {
  session_->complete(flight);
  after_batch(pending_consumed_, pending_close_);
}

void Connection::after_batch(size_t consumed, bool close) {
  begin_ += consumed;
  if (close) close_after_write_ = true;
  if (state_ == State::kClosed) return;
  if (!session_->output().empty() || close_after_write_) return write();
  pump();
}

void Connection::write() {
  if (state_ == State::kClosed) return;
  state_ = State::kWriting;
  write_since_ms_ = now_ms();
  wbuf_.clear();
  wbuf_.swap(session_->output());
  auto self = shared_from_this();
  asio::async_write(sock_, asio::buffer(wbuf_), [self](asio::error_code ec, size_t) {
    if (ec || self->close_after_write_) return self->close();
    // Give back memory a single large reply made us hold.
    if (self->wbuf_.capacity() > (1 << 20)) std::string().swap(self->wbuf_);
    self->pump();
  });
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  asio::error_code ec;
  watchdog_.cancel();
  stall_timer_.cancel();
  sock_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  sock_.close(ec);
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
  const int64_t now = now_ms();
  ConnectionClock c;
  c.writing = state_ == State::kWriting;
  c.write_since_ms = write_since_ms_;
  c.waiting_for_input = state_ == State::kReading;
  c.partial_since_ms = partial_since_ms_;
  c.input_empty = begin_ == end_;
  c.last_read_ms = last_read_ms_;
  const char* why = deadline_breach(limits_, c, now, svc_.counters);
  if (!why) return;
  if (*why) spdlog::info("client {} dropped: {}", client_->addr, why);
  close();
}

const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c, int64_t now,
                            NodeCounters& counters) {
  if (c.writing && now - c.write_since_ms > limits.output_timeout_ms) {
    counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
    return "not reading its replies";
  }
  if (!c.waiting_for_input) return nullptr;
  if (c.partial_since_ms != 0 && now - c.partial_since_ms > limits.query_deadline_ms) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "request not completed within the query deadline";
  }
  if (limits.timeout_s > 0 && c.input_empty && now - c.last_read_ms > limits.timeout_s * 1000) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "";
  }
  return nullptr;
}

}  // namespace fg
