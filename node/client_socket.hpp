// What every client connection does with its socket, RESP and native alike: registering
// and unregistering the client, writing replies, closing, and the defences — a client that
// does not read its replies, one that leaves a request half-sent, and a silent idler are
// dropped (each connection keeps a ConnectionClock and, once a second, asks
// deadline_breach()). A connection is plain TCP, or TLS over it (ByteStream).
#pragma once
#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "byte_stream.hpp"
#include "lease_upkeep.hpp"
#include "services.hpp"
#include "tls_context.hpp"

namespace fg {

struct ConnectionLimits {
  size_t max_query_bytes = 8 << 20;
  int64_t query_deadline_ms = 30000;
  int64_t output_timeout_ms = 30000;
  int64_t timeout_s = 0;
};

// When things last happened on a connection.
struct ConnectionClock {
  int64_t last_read_ms = 0;
  int64_t write_since_ms = 0;    // when the replies being written started
  int64_t partial_since_ms = 0;  // 0: no half-received request buffered
  // After the door took every whole request: what is left is half of one (or nothing).
  void input_left(bool empty, int64_t now_ms) {
    if (empty) {
      partial_since_ms = 0;
    } else if (partial_since_ms == 0) {
      partial_since_ms = now_ms;
    }
  }
};

// The clock of ConnectionClock: monotonic milliseconds from the kernel's coarse clock (a
// few ms of resolution, no hardware read), read several times per request; the deadlines
// it serves are seconds long.
int64_t connection_now_ms();

// What the connection is doing right now.
struct ConnectionState {
  bool writing = false;            // replies are being written
  bool waiting_for_input = false;  // nothing written or in flight: the client's turn
  bool input_empty = true;
};

// Null if the client may stay; otherwise why it is dropped ("" for a plain idle timeout,
// which is not logged). Counts the drop.
const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c,
                            ConnectionState s, int64_t now_ms, NodeCounters& counters);

// A new client connection: TCP_NODELAY, and a place in the client registry (CLIENT LIST,
// --maxclients); null when the node already has maxclients.
std::shared_ptr<ClientInfo> register_client(ByteStream& stream, Services& svc);
// The connection is gone: out of the registry, and every lease it took with BOUND goes back,
// wherever its key lives.
void unregister_client(Services& svc, const std::shared_ptr<ClientInfo>& client);
// Reports the bytes a connection's buffers hold (`*reported`: what it said last) for
// maxmemory-clients; false when the client is to be evicted (logged and counted here: the
// caller closes the connection).
bool account_memory(Services& svc, ClientInfo& client, int64_t bytes, int64_t& reported,
                    int64_t now_ms);
// Closes both directions and the socket (errors no longer matter).
void shut(ByteStream& stream);

// A TLS connection's handshake, within `deadline_ms`; then `done(true)`, or `done(false)`
// when the client failed it (logged sparsely and counted in `counters`; the socket is
// closed). Clients on plain ports go straight to `done(true)`.
// `owner` keeps the stream alive meanwhile.
void accept_tls(ByteStream& stream, std::shared_ptr<void> owner, int64_t deadline_ms,
                TlsCounters* counters, std::function<void(bool)> done);

// `conn->serve()` once its stream is ready: at once on a plain port, after the TLS
// handshake (within the query deadline) on a TLS port; never if the handshake fails.
template <class Conn>
void serve_when_secured(const std::shared_ptr<Conn>& conn, ByteStream& stream, Services& svc,
                        const ConnectionLimits& limits) {
  if (!stream.tls()) return conn->serve();
  accept_tls(stream, conn, limits.query_deadline_ms, svc.tls ? &svc.tls->counters : nullptr,
             [conn](bool ok) {
               if (ok) conn->serve();
             });
}

// Moves `out` into `wbuf` and writes it all; then `done(ec)`. A write buffer that one big
// reply grew past 1 MiB is given back to the system.
template <class Done>
void write_out(ByteStream& stream, std::string& out, std::string& wbuf, Done done) {
  wbuf.clear();
  wbuf.swap(out);
  stream.async_write_all(asio::buffer(wbuf),
                         [&wbuf, done = std::move(done)](asio::error_code ec, size_t) mutable {
                           if (wbuf.capacity() > (1 << 20)) std::string().swap(wbuf);
                           done(ec);
                         });
}

// Writes `out` now, as far as the socket takes it without waiting (the socket is
// non-blocking, register_client): true if all of it went, or the socket failed (`ec`);
// false if the rest is being written in the background (in `wbuf`), `done(ec)` to follow.
// The common case, a reply that fits the socket's buffer, costs one send and nothing of
// the event loop. TLS replies always go through the event loop (a record half-sent cannot
// be resumed by a later plain write).
template <class Done>
bool write_now(ByteStream& stream, std::string& out, std::string& wbuf, asio::error_code& ec,
               Done done) {
  if (stream.tls()) {
    write_out(stream, out, wbuf, std::move(done));
    return false;
  }
  const size_t n = stream.socket().write_some(asio::buffer(out), ec);
  if (!ec && n == out.size()) {
    out.clear();
    return true;
  }
  if (ec && ec != asio::error::would_block && ec != asio::error::try_again) return true;
  ec = {};
  out.erase(0, n);
  write_out(stream, out, wbuf, std::move(done));
  return false;
}

}  // namespace fg
