// Framing, batching, deadlines and reconnects for peer calls.
#include "peer_link.hpp"

#include <spdlog/spdlog.h>

#include "errors.hpp"
#include "length_prefix.hpp"
#include "peer.pb.h"

namespace fg {

namespace {
constexpr uint32_t kPeerWireVersion = 1;

// A received frame's payload: all of it, or with frame keys what precedes a tag that checks.
// A link keyed with a secret `key` no longer holds (rotated out) takes no more frames: its
// next connection proves a secret held now.
bool open_peer_frame(const BusKey* key, PeerFrameKeys& keys, const std::string& frame,
                     std::string_view& payload) {
  payload = frame;
  if (!keys.active()) return true;
  if (frame.size() < PeerFrameKeys::kTagBytes) return false;
  if (key && keys.checked_at != key->generation()) {
    keys.checked_at = key->generation();
    if (!key->holds(keys.secret())) return false;
  }
  payload = payload.substr(0, frame.size() - PeerFrameKeys::kTagBytes);
  return keys.check(payload, std::string_view(frame).substr(payload.size()));
}

bool split_addr(const std::string& addr, std::string& host, std::string& port) {
  const auto c = addr.rfind(':');
  if (c == std::string::npos) return false;
  host = addr.substr(0, c);
  port = addr.substr(c + 1);
  return true;
}
}  // namespace

// ---------------------------------------------------------------- client

void count_peer_tls_failure(TlsContexts* tls, const std::string& who, const asio::error_code& ec) {
  const uint64_t n = tls->counters.handshake_failures.fetch_add(1, std::memory_order_relaxed) + 1;
  if ((n & (n - 1)) == 0) {  // (the 1st, 2nd, 4th, 8th...: not a flood)
    spdlog::warn("peer link TLS handshake with {} failed: {} ({} TLS failures so far)", who,
                 tls_error_text(ec), n);
  }
}

PeerClient::PeerClient(asio::io_context& io, std::string addr, std::string local_host, BusKey* key,
                       TlsContexts* tls)
    : io_(io),
      addr_(std::move(addr)),
      local_host_(std::move(local_host)),
      key_(key),
      tls_(tls),
      stream_(io),
      backoff_timer_(io),
      connect_timer_(io) {}

void PeerClient::call(uint32_t kind, std::string body, std::chrono::milliseconds deadline,
                      PeerCallback cb) {
  if (closed_) {
    asio::post(io_, [cb] { cb(PeerStatus::kUnavailable, {}); });
    return;
  }
  const uint64_t id = next_id_++;
  Pending p;
  p.cb = std::move(cb);
  p.timer = std::make_unique<SteadyTimer>(io_, deadline);
  p.timer->async_wait([self = shared_from_this(), id](asio::error_code ec) {
    if (!ec) self->finish(id, PeerStatus::kTimeout, {});
  });
  pending_.emplace(id, std::move(p));
  outbox_.push_back({id, {kind, std::move(body)}});
  if (state_ == State::kConnected) {
    flush();
  } else if (state_ == State::kIdle) {
    connect();
  } else if (state_ == State::kBackoff) {
    // Known unreachable right now: say so instead of letting the caller wait it out.
    fail_all(PeerStatus::kUnavailable);
  }
}

void PeerClient::finish(uint64_t id, PeerStatus st, std::string body) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  PeerCallback cb = std::move(it->second.cb);
  it->second.timer->cancel();
  pending_.erase(it);
  outbox_.erase(
      std::remove_if(outbox_.begin(), outbox_.end(), [id](const auto& o) { return o.first == id; }),
      outbox_.end());
  cb(st, std::move(body));
}

void PeerClient::fail_all(PeerStatus st) {
  std::vector<uint64_t> ids;
  for (auto& [id, p] : pending_) ids.push_back(id);
  for (uint64_t id : ids) finish(id, st, {});
}

void PeerClient::bind_local(const asio::ip::tcp::endpoint& to) {
  if (local_host_.empty()) return;
  asio::error_code ec;
  const auto ip = asio::ip::make_address(local_host_, ec);
  if (ec || ip.is_unspecified() || ip.is_v4() != to.address().is_v4()) return;
  stream_.socket().open(to.protocol(), ec);
  if (!ec) stream_.socket().bind(asio::ip::tcp::endpoint(ip, 0), ec);
  // Not fatal: the kernel then picks the source address, as without a bind address.
  if (ec) stream_.socket() = asio::ip::tcp::socket(io_);
}

void PeerClient::connect() {
  std::string host, port;
  if (!split_addr(addr_, host, port)) {
    fail_all(PeerStatus::kUnavailable);
    return;
  }
  state_ = State::kConnecting;
  asio::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (ec) {
    fail_all(PeerStatus::kUnavailable);
    state_ = State::kIdle;
    return;
  }
  asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(std::atoi(port.c_str())));
  stream_.socket() = asio::ip::tcp::socket(io_);
  stream_.reset(tls_ && tls_->active() ? tls_->client() : nullptr);
  frames_.set({}, {});  // (until this connection's handshake gives it keys)
  bind_local(ep);
  connect_timer_.expires_after(kConnectTimeout);
  connect_timer_.async_wait([self = shared_from_this()](asio::error_code e) {
    asio::error_code ignored;
    if (!e && self->state_ == State::kConnecting) self->stream_.socket().close(ignored);
  });
  stream_.socket().async_connect(ep, [self = shared_from_this()](asio::error_code ec) {
    if (self->closed_) return;
    if (ec) {
      self->connect_timer_.cancel();
      return self->backoff();
    }
    asio::error_code ignored;
    self->stream_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    if (self->stream_.tls()) return self->tls_handshake();  // (the timer still runs)
    self->secured();
  });
}

// Mutual TLS: the peer's certificate must chain to our CA, and it sees ours.
void PeerClient::tls_handshake() {
  stream_.async_handshake(asio::ssl::stream_base::client,
                          [self = shared_from_this()](asio::error_code ec) {
                            if (self->closed_) return;
                            if (ec) {
                              self->connect_timer_.cancel();
                              count_peer_tls_failure(self->tls_, self->addr_, ec);
                              asio::error_code ignored;
                              self->stream_.socket().close(ignored);
                              return self->backoff();
                            }
                            self->tls_->counters.handshakes.fetch_add(1, std::memory_order_relaxed);
                            self->secured();
                          });
}

void PeerClient::secured() {
  if (key_ && key_->active()) return handshake();  // (the timer still runs)
  connect_timer_.cancel();
  connected();
}

void PeerClient::backoff() {
  fail_all(PeerStatus::kUnavailable);
  state_ = State::kBackoff;
  backoff_timer_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(2000));
  backoff_timer_.async_wait([self = shared_from_this()](asio::error_code e) {
    if (!e && !self->closed_) self->state_ = State::kIdle;
  });
}

void PeerClient::connected() {
  state_ = State::kConnected;
  backoff_ = std::chrono::milliseconds(50);
  read_header();
  flush();
}

// Our hello, then the peer's answer, within the connect timeout; a peer without the secret
// (or with another) is unreachable as far as calls go. With cluster-bus-legacy, a peer that
// hangs up on our hello may be a node of the previous version: the next attempt speaks its
// handshake.
void PeerClient::handshake() {
  const bool legacy = legacy_ && key_->legacy();
  hello_ = key_->peer_hello(addr_, legacy);
  proof_.assign(legacy ? BusKey::kLegacyProofBytes : BusKey::kAnswerBytes, '\0');
  stream_.async_write_all(asio::buffer(hello_),
                          [self = shared_from_this()](asio::error_code, size_t) {});
  stream_.async_read_all(
      asio::buffer(proof_), [self = shared_from_this()](asio::error_code ec, size_t) {
        if (self->closed_) return;
        self->connect_timer_.cancel();
        if (ec && self->key_->legacy()) {
          // (Alternates while the peer is down; stays with what worked.)
          self->legacy_ = !self->legacy_;
          if (self->legacy_) {
            spdlog::debug(
                "peer link to {}: hung up on the handshake; trying "
                "the previous version's (cluster-bus-legacy)",
                self->addr_);
          }
        }
        if (ec || !self->key_->peer_proven(self->hello_, self->proof_, &self->frames_)) {
          if (!ec) self->key_->count_refused_peer();
          asio::error_code ignored;
          self->stream_.socket().close(ignored);
          return self->backoff();
        }
        // (Over TLS the channel authenticates every byte already.)
        if (self->stream_.tls()) self->frames_.set({}, {});
        self->connected();
      });
}

void PeerClient::flush() {
  if (writing_ || outbox_.empty() || state_ != State::kConnected) return;
  wire::PeerFrame frame;
  frame.set_version(kPeerWireVersion);
  // Up to a frame's budget per write; what does not fit waits for the next frame. A
  // single request the receiver could never accept fails here instead of breaking the link.
  size_t bytes = 0, taken = 0;
  std::vector<uint64_t> too_big;
  for (; taken < outbox_.size(); ++taken) {
    auto& [id, kb] = outbox_[taken];
    const size_t n = kb.second.size() + 32;
    if (n > kPeerFrameBudget) {
      too_big.push_back(id);
      continue;
    }
    if (bytes > 0 && bytes + n > kPeerFrameBudget) break;
    bytes += n;
    auto* r = frame.add_requests();
    r->set_id(id);
    r->set_kind(kb.first);
    r->set_body(std::move(kb.second));
  }
  outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(taken));
  for (uint64_t id : too_big) {
    asio::post(io_, [self = shared_from_this(), id] { self->finish(id, PeerStatus::kError, {}); });
  }
  if (frame.requests_size() == 0) return;
  std::string payload;
  frame.SerializeToString(&payload);
  wbuf_.clear();
  const size_t at = open_frame(wbuf_);
  wbuf_ += payload;
  if (frames_.active()) frames_.tag(payload, wbuf_);
  close_frame(wbuf_, at);
  writing_ = true;
  ++frames_sent_;
  stream_.async_write_all(asio::buffer(wbuf_),
                          [self = shared_from_this()](asio::error_code ec, size_t) {
                            self->writing_ = false;
                            if (ec) return;  // the reader sees the broken link and fails the calls
                            self->flush();
                          });
}

void PeerClient::read_header() {
  stream_.async_read_all(asio::buffer(header_, 4), [self = shared_from_this()](asio::error_code ec,
                                                                               size_t) {
    const uint32_t n = ec ? 0 : read_length(self->header_);
    if (ec || n > kMaxPeerFrameBytes) {
      asio::error_code ignored;
      self->stream_.socket().close(ignored);
      self->state_ = State::kIdle;
      self->fail_all(PeerStatus::kUnavailable);
      return;
    }
    self->rbuf_.resize(n);
    self->stream_.async_read_all(asio::buffer(self->rbuf_), [self](asio::error_code ec2, size_t) {
      std::string_view payload;
      if (ec2 || !open_peer_frame(self->key_, self->frames_, self->rbuf_, payload)) {
        if (!ec2 && self->key_) self->key_->count_refused_peer();  // (altered, replayed...)
        asio::error_code ignored;
        self->stream_.socket().close(ignored);
        self->state_ = State::kIdle;
        self->fail_all(PeerStatus::kUnavailable);
        return;
      }
      wire::PeerFrame frame;
      if (frame.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        for (auto& r : *frame.mutable_responses()) {
          PeerStatus st = r.status() == wire::PeerResponse::OK      ? PeerStatus::kOk
                          : r.status() == wire::PeerResponse::ERROR ? PeerStatus::kError
                                                                    : PeerStatus::kUnknownKind;
          self->finish(r.id(), st,
                       st == PeerStatus::kError ? r.error() : std::move(*r.mutable_body()));
        }
      }
      self->read_header();
    });
  });
}

void PeerClient::abort_calls() {
  if (closed_) return;
  fail_all(PeerStatus::kTimeout);
  asio::error_code ec;
  // The pending read (or connect) completes with an error and resets the link's state.
  if (state_ == State::kConnected || state_ == State::kConnecting) stream_.socket().close(ec);
}

void PeerClient::close() {
  closed_ = true;
  asio::error_code ec;
  stream_.socket().close(ec);
  backoff_timer_.cancel();
  connect_timer_.cancel();
  fail_all(PeerStatus::kUnavailable);
}

// ---------------------------------------------------------------- server

class PeerServer::Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(asio::ip::tcp::socket s, std::shared_ptr<Handler> h, BusKey* key, TlsContexts* tls)
      : stream_(std::move(s), tls && tls->active() ? tls->server() : nullptr),
        handler_(std::move(h)),
        key_(key),
        tls_(tls) {}
  void start() {
    if (!stream_.tls()) return secured();
    // Mutual TLS first (within the connect timeout): the caller must show a certificate
    // our CA signed, whatever tls-auth-clients says for clients.
    stream_.tls_layer().set_verify_mode(asio::ssl::verify_peer |
                                        asio::ssl::verify_fail_if_no_peer_cert);
    auto self = shared_from_this();
    timer_ = std::make_unique<SteadyTimer>(stream_.socket().get_executor(), kConnectTimeout);
    timer_->async_wait([self](asio::error_code ec) {
      asio::error_code ignored;
      if (!ec) self->stream_.socket().close(ignored);
    });
    stream_.async_handshake(asio::ssl::stream_base::server, [self](asio::error_code ec) {
      self->timer_->cancel();
      if (ec) {
        asio::error_code ignored;
        const auto from = self->stream_.socket().remote_endpoint(ignored);
        count_peer_tls_failure(self->tls_,
                               ignored
                                   ? std::string("a caller")
                                   : from.address().to_string() + ":" + std::to_string(from.port()),
                               ec);
        return;  // dropping the last reference closes it
      }
      self->tls_->counters.handshakes.fetch_add(1, std::memory_order_relaxed);
      self->secured();
    });
  }

 private:
  void secured() {
    if (!key_ || !key_->active()) return read_header();
    // The caller's hello first (within a second), then our answer, then frames.
    hello_.assign(BusKey::kMagicBytes, '\0');
    auto self = shared_from_this();
    timer_ = std::make_unique<SteadyTimer>(stream_.socket().get_executor(), kConnectTimeout);
    timer_->async_wait([self](asio::error_code ec) {
      if (ec) return;
      self->key_->count_refused_peer();  // (no hello in time: not a node of ours)
      asio::error_code ignored;
      self->stream_.socket().close(ignored);
    });
    stream_.async_read_all(asio::buffer(hello_), [self](asio::error_code ec, size_t) {
      const size_t n = ec ? 0 : self->key_->hello_bytes(self->hello_);
      if (ec || n == 0) {
        self->timer_->cancel();
        if (!ec) self->key_->count_refused_peer();  // (not a hello this node accepts)
        return;
      }
      self->hello_.resize(n);
      self->stream_.async_read_all(
          asio::buffer(self->hello_.data() + BusKey::kMagicBytes, n - BusKey::kMagicBytes),
          [self](asio::error_code ec2, size_t) {
            self->timer_->cancel();
            if (!ec2) self->answer();
          });
    });
  }

  void answer() {
    auto proof = key_->peer_answer(hello_, &frames_);
    if (!proof) return;                      // dropping the last reference closes it
    if (stream_.tls()) frames_.set({}, {});  // (TLS authenticates every byte already)
    proof_ = std::move(*proof);
    writing_ = true;
    stream_.async_write_all(asio::buffer(proof_),
                            [self = shared_from_this()](asio::error_code ec, size_t) {
                              self->writing_ = false;
                              if (!ec) self->flush();
                            });
    read_header();
  }

  void read_header() {
    stream_.async_read_all(asio::buffer(header_, 4), [self = shared_from_this()](
                                                         asio::error_code ec, size_t) {
      if (ec) return;
      const uint32_t n = read_length(self->header_);
      if (n > kMaxPeerFrameBytes) return;  // dropping the last reference closes it
      self->rbuf_.resize(n);
      self->stream_.async_read_all(asio::buffer(self->rbuf_), [self](asio::error_code ec2, size_t) {
        if (ec2) return;
        std::string_view payload;
        if (!open_peer_frame(self->key_, self->frames_, self->rbuf_, payload)) {
          if (self->key_) self->key_->count_refused_peer();  // (altered, replayed, reordered)
          return;
        }
        wire::PeerFrame frame;
        if (!frame.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
            frame.version() / 1000 > kPeerWireVersion / 1000) {
          return;  // not a peer speaking our protocol: hang up
        }
        for (auto& r : *frame.mutable_requests()) self->dispatch(r);
        self->read_header();
      });
    });
  }
  void dispatch(wire::PeerRequest& r) {
    const uint64_t id = r.id();
    auto self = shared_from_this();
    (*handler_)(r.kind(), std::move(*r.mutable_body()),
                [self, id](PeerStatus st, std::string body, std::string error) {
                  auto* resp = &self->pending_.emplace_back();
                  resp->set_id(id);
                  resp->set_status(st == PeerStatus::kOk      ? wire::PeerResponse::OK
                                   : st == PeerStatus::kError ? wire::PeerResponse::ERROR
                                                              : wire::PeerResponse::UNKNOWN_KIND);
                  resp->set_body(std::move(body));
                  resp->set_error(std::move(error));
                  self->flush();
                });
  }
  void flush() {
    if (writing_ || pending_.empty()) return;
    // As many responses as fit a frame's budget; a response too large for any frame is
    // replaced by an error for its caller.
    wire::PeerFrame out;
    out.set_version(kPeerWireVersion);
    size_t bytes = 0;
    while (!pending_.empty()) {
      wire::PeerResponse& r = pending_.front();
      const size_t n = r.ByteSizeLong() + 16;
      if (n > kPeerFrameBudget) {
        r.clear_body();
        r.set_status(wire::PeerResponse::ERROR);
        r.set_error(err::kPeerFrameTooLarge);
        continue;
      }
      if (bytes > 0 && bytes + n > kPeerFrameBudget) break;
      bytes += n;
      *out.add_responses() = std::move(r);
      pending_.pop_front();
    }
    std::string payload;
    out.SerializeToString(&payload);
    wbuf_.clear();
    const size_t at = open_frame(wbuf_);
    wbuf_ += payload;
    if (frames_.active()) frames_.tag(payload, wbuf_);
    close_frame(wbuf_, at);
    writing_ = true;
    stream_.async_write_all(asio::buffer(wbuf_),
                            [self = shared_from_this()](asio::error_code ec, size_t) {
                              self->writing_ = false;
                              if (!ec) self->flush();
                            });
  }

  ByteStream stream_;
  std::shared_ptr<Handler> handler_;
  BusKey* key_;
  TlsContexts* tls_;
  std::unique_ptr<SteadyTimer> timer_;
  std::string hello_, proof_;
  PeerFrameKeys frames_;
  char header_[4];
  std::string rbuf_;
  std::string wbuf_;
  std::deque<wire::PeerResponse> pending_;
  bool writing_ = false;
};

PeerServer::PeerServer(asio::io_context& io, const std::string& host, uint16_t port,
                       Handler handler, BusKey* key, TlsContexts* tls)
    : acceptor_(io), handler_(std::make_shared<Handler>(std::move(handler))), key_(key), tls_(tls) {
  asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  acceptor_.open(ep.protocol());
  acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  accept();
}

void PeerServer::accept() {
  acceptor_.async_accept([this](asio::error_code ec, asio::ip::tcp::socket s) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      asio::error_code ignored;
      s.set_option(asio::ip::tcp::no_delay(true), ignored);
      std::make_shared<Conn>(std::move(s), handler_, key_, tls_)->start();
    }
    accept();
  });
}

void PeerServer::close() {
  asio::error_code ec;
  acceptor_.close(ec);
}

}  // namespace fg
