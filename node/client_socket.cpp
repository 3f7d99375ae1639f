// A client connection's registration, writes, closing and deadlines.
#include "client_socket.hpp"

#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>

#include "timer.hpp"

namespace fg {

const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c,
                            ConnectionState s, int64_t now, NodeCounters& counters) {
  if (s.writing && now - c.write_since_ms > limits.output_timeout_ms) {
    counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
    return "not reading its replies";
  }
  if (!s.waiting_for_input) return nullptr;
  if (c.partial_since_ms != 0 && now - c.partial_since_ms > limits.query_deadline_ms) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "request not completed within the query deadline";
  }
  if (limits.timeout_s > 0 && s.input_empty && now - c.last_read_ms > limits.timeout_s * 1000) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "";
  }
  return nullptr;
}

namespace {
std::string endpoint_text(const asio::ip::tcp::endpoint& e) {
  return e.address().to_string() + ":" + std::to_string(e.port());
}
}  // namespace

std::shared_ptr<ClientInfo> register_client(ByteStream& stream, Services& svc) {
  asio::ip::tcp::socket& sock = stream.socket();
  asio::error_code ec;
  sock.set_option(asio::ip::tcp::no_delay(true), ec);
  sock.non_blocking(true, ec);  // (write_now; asynchronous operations do not mind)
  const auto remote = sock.remote_endpoint(ec);
  const auto local = sock.local_endpoint(ec);
  return svc.clients->add(endpoint_text(remote), endpoint_text(local),
                          svc.clock->now_ns() / 1'000'000);
}

void unregister_client(Services& svc, const std::shared_ptr<ClientInfo>& client) {
  if (!client) return;
  svc.clients->remove(client->id);
  release_bound_leases(svc, client->id);
}

int64_t connection_now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

bool account_memory(Services& svc, ClientInfo& client, int64_t bytes, int64_t& reported,
                    int64_t now_ms) {
  if (bytes != reported) {
    reported = bytes;
    svc.clients->track(client, bytes, now_ms);
  }
  if (!client.evict.load(std::memory_order_relaxed)) return true;
  spdlog::info(
      "client {} evicted: its buffers hold {} bytes and all clients' are over "
      "maxmemory-clients ({} bytes)",
      client.addr, bytes, svc.clients->max_memory());
  return false;
}

void shut(ByteStream& stream) {
  asio::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream.socket().close(ec);
}

void accept_tls(ByteStream& stream, std::shared_ptr<void> owner, int64_t deadline_ms,
                TlsCounters* counters, std::function<void(bool)> done) {
  if (!stream.tls()) return done(true);
  // A client that connects and says nothing is cut off at the deadline.
  auto timer = std::make_shared<SteadyTimer>(stream.socket().get_executor());
  timer->expires_after(std::chrono::milliseconds(std::max<int64_t>(deadline_ms, 1)));
  timer->async_wait([&stream, owner](asio::error_code ec) {
    if (!ec) shut(stream);
  });
  stream.async_handshake(
      asio::ssl::stream_base::server,
      [&stream, owner, timer, counters, done = std::move(done)](asio::error_code ec) {
        timer->cancel();
        if (!ec) {
          if (counters) counters->handshakes.fetch_add(1, std::memory_order_relaxed);
          return done(true);
        }
        const uint64_t n =
            counters ? counters->handshake_failures.fetch_add(1, std::memory_order_relaxed) + 1 : 1;
        if ((n & (n - 1)) == 0) {  // (the 1st, 2nd, 4th, 8th...: not a line per scanner)
          asio::error_code ignored;
          const auto peer = stream.socket().remote_endpoint(ignored);
          spdlog::info("TLS handshake with {} failed: {} ({} failures so far)",
                       ignored ? std::string("a client") : endpoint_text(peer), tls_error_text(ec),
                       n);
        }
        // A reset, not a quiet close: what redis-server's clients see from it too.
        asio::error_code ignored;
        stream.socket().set_option(asio::socket_base::linger(true, 0), ignored);
        stream.socket().close(ignored);
        done(false);
      });
}

}  // namespace fg
