// A connection's byte stream: its TCP socket, read and written directly, or through TLS
// over it. One branch per operation; the plaintext path is the socket's own. Shared, as the
// length prefix is, by the client doors (node/), the peer links (gossip/) and the client
// library. Header only: its users bring Asio and OpenSSL.
#pragma once
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <memory>

namespace fg {

class ByteStream {
 public:
  explicit ByteStream(asio::ip::tcp::socket sock, std::shared_ptr<asio::ssl::context> tls = {})
      : sock_(std::move(sock)) {
    reset(std::move(tls));
  }
  // A socket not yet open, for a connection to come (reset() picks TLS or not then).
  explicit ByteStream(asio::io_context& io) : sock_(io) {}
  ByteStream(const ByteStream&) = delete;  // (the TLS layer holds a reference to sock_)
  ByteStream& operator=(const ByteStream&) = delete;

  // A fresh TLS layer (`tls` set) or none, for a new connection on socket(). The old
  // layer lives on until the operations still pending on it have completed.
  void reset(std::shared_ptr<asio::ssl::context> tls) {
    tls_.reset();
    ctx_ = std::move(tls);
    if (ctx_) tls_ = std::make_shared<Tls>(sock_, *ctx_);
  }
  asio::ip::tcp::socket& socket() { return sock_; }
  bool tls() const { return tls_ != nullptr; }
  // The TLS layer (tls() only): verification settings, the peer's certificate.
  asio::ssl::stream<asio::ip::tcp::socket&>& tls_layer() { return *tls_; }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& b, Handler&& h) {
    if (tls_) {
      tls_->async_read_some(b, keep(std::forward<Handler>(h)));
    } else {
      sock_.async_read_some(b, std::forward<Handler>(h));
    }
  }
  // Reads until `b` is full.
  template <class Buffers, class Handler>
  void async_read_all(const Buffers& b, Handler&& h) {
    if (tls_) {
      asio::async_read(*tls_, b, keep(std::forward<Handler>(h)));
    } else {
      asio::async_read(sock_, b, std::forward<Handler>(h));
    }
  }
  template <class Buffers, class Handler>
  void async_write_all(const Buffers& b, Handler&& h) {
    if (tls_) {
      asio::async_write(*tls_, b, keep(std::forward<Handler>(h)));
    } else {
      asio::async_write(sock_, b, std::forward<Handler>(h));
    }
  }
  // The TLS handshake (tls() only), as the accepting or the connecting side.
  template <class Handler>
  void async_handshake(asio::ssl::stream_base::handshake_type side, Handler&& h) {
    tls_->async_handshake(side, keep(std::forward<Handler>(h)));
  }

 private:
  using Tls = asio::ssl::stream<asio::ip::tcp::socket&>;
  // The handler, holding the TLS layer (and its context) until it has run.
  template <class Handler>
  auto keep(Handler&& h) {
    return [layer = tls_, ctx = ctx_, h = std::forward<Handler>(h)](auto&&... args) mutable {
      h(std::forward<decltype(args)>(args)...);
    };
  }

  asio::ip::tcp::socket sock_;
  std::shared_ptr<asio::ssl::context> ctx_;  // kept: a reload makes new ones
  std::shared_ptr<Tls> tls_;
};

}  // namespace fg
