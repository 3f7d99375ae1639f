// A client connection's life: connect, write frames, read answers, break and hand back.
#include "connection.hpp"

#include <algorithm>
#include <cstring>

#include "length_prefix.hpp"

namespace floodgate {

namespace {
bool split_addr(const std::string& a, std::string& host, std::string& port) {
  const size_t c = a.rfind(':');
  if (c == std::string::npos || c == 0 || c + 1 == a.size()) return false;
  host = a.substr(0, c);
  port = a.substr(c + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return true;
}
}  // namespace

Connection::Connection(Client::Impl& impl, std::string addr)
    : impl_(impl),
      addr_(std::move(addr)),
      stream_(impl.io()),
      resolver_(impl.io()),
      timer_(impl.io()) {}

// Calls made during one turn of the I/O loop (say, by the callbacks of one answer frame)
// leave together in one frame.
void Connection::send(CallPtr c) {
  pending_.push_back(std::move(c));
  if (state_ == kIdle) return connect_soon();
  if (state_ != kUp || flush_posted_ || writing_) return;
  flush_posted_ = true;
  asio::post(impl_.io(), [self = shared_from_this(), g = gen_] {
    self->flush_posted_ = false;
    if (self->gen_ == g) self->flush();
  });
}

// Reconnects to a node that just failed wait a little longer each time (up to 1 s), so a
// dead node costs a connection attempt now and then, not one per retried call.
void Connection::connect_soon() {
  if (coarse_now() >= next_connect_) return connect();
  state_ = kConnecting;
  timer_.expires_at(next_connect_);
  timer_.async_wait([self = shared_from_this(), g = gen_](asio::error_code ec) {
    if (ec || self->gen_ != g) return;
    self->connect();
  });
}

void Connection::connect() {
  state_ = kConnecting;
  std::string host, port;
  if (!split_addr(addr_, host, port)) return broken("bad address (expected host:port)");
  // A fresh TLS layer for each connection, checking the node's certificate names `host`.
  if (asio::ssl::context* tls = impl_.tls()) {
    stream_.reset(std::shared_ptr<asio::ssl::context>(std::shared_ptr<void>(), tls));
    if (impl_.options().tls.verify_host) {
      stream_.tls_layer().set_verify_callback(asio::ssl::host_name_verification(host));
    }
    asio::error_code ip_ec;
    asio::ip::make_address(host, ip_ec);
    if (ip_ec) SSL_set_tlsext_host_name(stream_.tls_layer().native_handle(), host.c_str());
  }
  auto self = shared_from_this();
  const uint64_t g = gen_;
  resolver_.async_resolve(
      host, port, [self, g](asio::error_code ec, asio::ip::tcp::resolver::results_type res) {
        if (self->gen_ != g) return;
        if (ec) return self->broken(ec.message());
        asio::async_connect(self->stream_.socket(), res,
                            [self, g](asio::error_code ec2, const asio::ip::tcp::endpoint&) {
                              if (self->gen_ != g) return;
                              if (ec2) return self->broken(ec2.message());
                              asio::error_code ignored;
                              self->stream_.socket().set_option(asio::ip::tcp::no_delay(true),
                                                                ignored);
                              if (!self->stream_.tls()) return self->up();
                              self->stream_.async_handshake(
                                  asio::ssl::stream_base::client, [self, g](asio::error_code ec3) {
                                    if (self->gen_ != g) return;
                                    if (ec3)
                                      return self->broken("TLS handshake failed: " + ec3.message());
                                    self->up();
                                  });
                            });
      });
}

// A TLS 1.3 server checks the client's certificate after the client's side of the
// handshake is done: a node that requires one sends its alert and resets the connection,
// and the reset may arrive before the alert is read. Said plainly rather than as a reset.
std::string Connection::lost(const asio::error_code& ec) const {
  if (stream_.tls() && !answered_ && ec == asio::error::connection_reset &&
      impl_.options().tls.cert_file.empty()) {
    return ec.message() +
           " before the node answered: it may require a client certificate (certificate "
           "required; Options::tls.cert_file)";
  }
  return ec.message();
}

void Connection::up() {
  state_ = kUp;
  answered_ = false;
  backoff_ = std::chrono::milliseconds(0);
  hello_sent_ = false;
  read();
  flush();
}

void Connection::flush() {
  const Client::Options& opt = impl_.options();
  if (state_ != kUp || writing_ || pending_.empty() ||
      flights_.size() >= opt.max_frames_in_flight) {
    return;
  }
  body_.clear();
  fg::wire::ClientFrameWriter w(body_);
  if (!hello_sent_) {
    pb::Hello h;
    h.set_client_name(opt.name);
    h.set_password(opt.password);
    h.set_user(opt.user);
    h.set_watch_topology(true);
    h.set_allowed_omits_retry(true);  // (read back as -1 below)
    w.hello(h.SerializeAsString());
    hello_sent_ = true;
  }
  Flight f;
  f.sent = coarse_now();
  const size_t n_calls = std::min(pending_.size(), opt.max_batch);
  for (size_t i = 0; i < n_calls; ++i) {
    CallPtr c = std::move(pending_.front());
    pending_.pop_front();
    if (c->finished) continue;
    w.add(c->req);
    f.calls.push_back(std::move(c));
  }
  if (f.calls.empty()) return;
  w.finish();
  wbuf_.swap(body_);
  flights_.push_back(std::move(f));
  impl_.count_frame();
  writing_ = true;
  auto self = shared_from_this();
  const uint64_t g = gen_;
  stream_.async_write_all(asio::buffer(wbuf_), [self, g](asio::error_code ec, size_t) {
    if (self->gen_ != g) return;
    self->writing_ = false;
    if (ec) return self->broken(self->lost(ec));
    self->flush();
  });
}

void Connection::read() {
  if (rbuf_.size() - rend_ < 4096) {
    if (rbeg_ > 0) {
      std::memmove(rbuf_.data(), rbuf_.data() + rbeg_, rend_ - rbeg_);
      rend_ -= rbeg_;
      rbeg_ = 0;
    }
    if (rbuf_.size() - rend_ < 4096) rbuf_.resize(rbuf_.size() * 2);
  }
  auto self = shared_from_this();
  const uint64_t g = gen_;
  stream_.async_read_some(asio::buffer(rbuf_.data() + rend_, rbuf_.size() - rend_),
                          [self, g](asio::error_code ec, size_t n) {
                            if (self->gen_ != g) return;
                            if (ec) return self->broken(self->lost(ec));
                            self->answered_ = true;
                            self->rend_ += n;
                            if (!self->parse()) return;
                            self->read();
                          });
}

bool Connection::parse() {
  while (rend_ - rbeg_ >= 4) {
    const size_t n = fg::read_length(rbuf_.data() + rbeg_);
    if (n > fg::wire::kMaxFrameBytes) {
      broken("frame too large");
      return false;
    }
    if (rend_ - rbeg_ - 4 < n) {
      if (rbuf_.size() < n + 4 + 4096) rbuf_.resize(n + 4 + 4096);
      break;
    }
    if (!fg::wire::decode_server_frame(std::string_view(rbuf_.data() + rbeg_ + 4, n), frame_)) {
      broken("malformed frame from the node");
      return false;
    }
    rbeg_ += 4 + n;
    impl_.on_alive(addr_);
    if (frame_.push) {
      pb::Topology t;
      if (frame_.has_topology &&
          t.ParseFromArray(frame_.topology.data(), static_cast<int>(frame_.topology.size()))) {
        impl_.on_topology(t, addr_);
      }
      continue;
    }
    if (flights_.empty()) {
      broken("an answer nobody asked for");
      return false;
    }
    Flight f = std::move(flights_.front());
    flights_.pop_front();
    auto self = shared_from_this();  // on_result may break this connection
    constexpr size_t kAhead = 8;     // calls prefetched ahead of the one being answered
    for (size_t i = 0; i < std::min(kAhead, f.calls.size()); ++i) f.calls[i]->prefetch();
    for (size_t i = 0; i < f.calls.size(); ++i) {
      if (i + kAhead < f.calls.size()) f.calls[i + kAhead]->prefetch();
      if (i < frame_.results.size() && fg::wire::decode_result(frame_.results[i], result_)) {
        // Asked for in the hello: an allowed result leaves out its retry_after_ms of -1. (An
        // older node writes it; an allowed result never carries another value.)
        if (result_.allowed && result_.retry_after_ms == 0) result_.retry_after_ms = -1;
        impl_.on_result(std::move(f.calls[i]), result_);
      } else {
        impl_.finish(f.calls[i], Status::kError, "the node's answer had fewer results", nullptr);
      }
    }
    if (state_ != kUp) return false;
  }
  if (rbeg_ == rend_) rbeg_ = rend_ = 0;
  flush();
  return true;
}

void Connection::broken(const std::string& why) {
  if (state_ == kIdle) return;
  state_ = kIdle;
  ++gen_;
  backoff_ = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(1000), std::max(backoff_ * 2, std::chrono::milliseconds(20)));
  next_connect_ = coarse_now() + backoff_;
  timer_.cancel();
  asio::error_code ec;
  stream_.socket().close(ec);
  stream_.socket() = asio::ip::tcp::socket(impl_.io());
  rbeg_ = rend_ = 0;
  writing_ = false;
  std::vector<CallPtr> sent, unsent;
  for (auto& f : flights_)
    for (auto& c : f.calls) sent.push_back(std::move(c));
  flights_.clear();
  for (auto& c : pending_) unsent.push_back(std::move(c));
  pending_.clear();
  impl_.on_broken(addr_, std::move(sent), std::move(unsent), why);
}

void Connection::collect(std::vector<CallPtr>& out) const {
  for (const auto& f : flights_)
    for (const auto& c : f.calls) out.push_back(c);
  for (const auto& c : pending_) out.push_back(c);
}

bool Connection::oldest(Clock::time_point& sent) const {
  if (flights_.empty()) return false;
  sent = flights_.front().sent;
  return true;
}

}  // namespace floodgate
