// A client connection's TCP socket, plain or with TLS over it (ByteStream), as a
// ClientStream.
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "byte_stream.hpp"
#include "client_stream.hpp"
#include "timer.hpp"

namespace fg {

namespace {

std::string endpoint_text(const asio::ip::tcp::endpoint& e) {
  return e.address().to_string() + ":" + std::to_string(e.port());
}

class SocketStream final : public ClientStream {
 public:
  SocketStream(asio::ip::tcp::socket sock, std::shared_ptr<asio::ssl::context> tls)
      : stream_(std::move(sock), std::move(tls)) {
    asio::error_code ec;
    stream_.socket().set_option(asio::ip::tcp::no_delay(true), ec);
    stream_.socket().non_blocking(true, ec);  // (write(); asynchronous operations do not mind)
  }

  asio::any_io_executor executor() override { return stream_.socket().get_executor(); }
  std::string peer() override {
    asio::error_code ec;
    return endpoint_text(stream_.socket().remote_endpoint(ec));
  }
  std::string local() override {
    asio::error_code ec;
    return endpoint_text(stream_.socket().local_endpoint(ec));
  }

  void secure(std::shared_ptr<Owner> owner, int64_t deadline_ms, TlsCounters* counters,
              std::function<void(bool)> done) override;

  void read_some(char* into, size_t n, std::shared_ptr<Owner> owner) override {
    if (stamped_) return read_stamped(into, n, std::move(owner));
    stream_.async_read_some(
        asio::buffer(into, n),
        [owner = std::move(owner)](asio::error_code ec, size_t got) { owner->on_read(ec, got); });
  }

  // The common case, a reply that fits the socket's buffer, costs one send and nothing of
  // the event loop. TLS replies always go through the event loop (a record half-sent
  // cannot be resumed by a later plain write).
  bool write(std::string& out, asio::error_code& ec, std::shared_ptr<Owner> owner) override {
    if (!stream_.tls()) {
      const size_t n = stream_.socket().write_some(asio::buffer(out), ec);
      if (!ec && n == out.size()) {
        out.clear();
        return true;
      }
      if (ec && ec != asio::error::would_block && ec != asio::error::try_again) return true;
      ec = {};
      out.erase(0, n);
    }
    wbuf_.clear();
    wbuf_.swap(out);
    stream_.async_write_all(asio::buffer(wbuf_),
                            [this, owner = std::move(owner)](asio::error_code ec, size_t) {
                              // A write buffer one big reply grew past 1 MiB goes back.
                              if (wbuf_.capacity() > (1 << 20)) std::string().swap(wbuf_);
                              wbuf_.clear();
                              owner->on_written(ec);
                            });
    return false;
  }
  // Plain TCP only: under TLS the bytes the kernel stamps are records, read ahead by the
  // TLS layer.
  bool stamp_input() override {
    if (stream_.tls()) return false;
    const int on = 1;
    stamped_ = ::setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on,
                            sizeof on) == 0;
    return stamped_;
  }
  int64_t received_ns() const override { return received_ns_; }

  size_t unsent_bytes() const override { return wbuf_.size(); }
  size_t held_bytes() const override { return wbuf_.capacity(); }

  void shut() override {
    asio::error_code ec;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

 private:
  // A read through recvmsg(), which hands over the kernel's receive stamp with the bytes: once
  // the socket is readable (so the handler runs from the event loop, never inside read_some).
  void read_stamped(char* into, size_t n, std::shared_ptr<Owner> owner) {
    stream_.socket().async_wait(
        asio::ip::tcp::socket::wait_read,
        [this, into, n, owner = std::move(owner)](asio::error_code ec) mutable {
          if (ec) return owner->on_read(ec, 0);
          size_t got = 0;
          ec = receive(into, n, got);
          if (ec == asio::error::would_block) return read_stamped(into, n, std::move(owner));
          owner->on_read(ec, got);
        });
  }

  asio::error_code receive(char* into, size_t n, size_t& got) {
    iovec iov{into, n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    ssize_t r;
    do {
      r = ::recvmsg(stream_.socket().native_handle(), &m, MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return asio::error::would_block;
      return asio::error_code(errno, asio::error::get_system_category());
    }
    if (r == 0) return asio::error::eof;
    received_ns_ = 0;  // (bytes that came before stamping was on carry none)
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        received_ns_ = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
      }
    }
    got = static_cast<size_t>(r);
    return {};
  }

  ByteStream stream_;
  std::string wbuf_;  // what a background write is sending
  bool stamped_ = false;
  int64_t received_ns_ = 0;
};

void SocketStream::secure(std::shared_ptr<Owner> owner, int64_t deadline_ms, TlsCounters* counters,
                          std::function<void(bool)> done) {
  if (!stream_.tls()) return done(true);
  // A client that connects and says nothing is cut off at the deadline.
  auto timer = std::make_shared<SteadyTimer>(stream_.socket().get_executor());
  timer->expires_after(std::chrono::milliseconds(std::max<int64_t>(deadline_ms, 1)));
  timer->async_wait([this, owner](asio::error_code ec) {
    if (!ec) shut();
  });
  stream_.async_handshake(
      asio::ssl::stream_base::server,
      [this, owner, timer, counters, done = std::move(done)](asio::error_code ec) {
        timer->cancel();
        if (!ec) {
          if (counters) counters->handshakes.fetch_add(1, std::memory_order_relaxed);
          return done(true);
        }
        const uint64_t n =
            counters ? counters->handshake_failures.fetch_add(1, std::memory_order_relaxed) + 1 : 1;
        if ((n & (n - 1)) == 0) {  // (the 1st, 2nd, 4th, 8th...: not a line per scanner)
          asio::error_code ignored;
          const auto from = stream_.socket().remote_endpoint(ignored);
          spdlog::info("TLS handshake with {} failed: {} ({} failures so far)",
                       ignored ? std::string("a client") : endpoint_text(from), tls_error_text(ec),
                       n);
        }
        // A reset, not a quiet close: what redis-server's clients see from it too.
        asio::error_code ignored;
        stream_.socket().set_option(asio::socket_base::linger(true, 0), ignored);
        stream_.socket().close(ignored);
        done(false);
      });
}

}  // namespace

std::unique_ptr<ClientStream> make_socket_stream(asio::ip::tcp::socket sock,
                                                 std::shared_ptr<asio::ssl::context> tls) {
  return std::make_unique<SocketStream>(std::move(sock), std::move(tls));
}

}  // namespace fg
