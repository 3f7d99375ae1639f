// What a client connection reads from and writes to. In a node, a TCP socket, plain or
// with TLS over it (make_socket_stream); in the simulator, an in-memory pipe on virtual
// time (tests/sim/memory_stream.hpp). The connection shell (client_connection.hpp) sees
// only this interface, so the same shell, with its deadlines and memory account, runs in
// both.
#pragma once
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tls_context.hpp"

namespace fg {

class ClientStream {
 public:
  // Who hears how the stream's operations ended: the connection. The stream keeps the
  // owner alive until it has been told.
  class Owner {
   public:
    virtual ~Owner() = default;
    virtual void on_read(asio::error_code ec, size_t n) = 0;
    virtual void on_written(asio::error_code ec) = 0;
  };

  virtual ~ClientStream() = default;
  // The event loop the connection runs on; its handlers are called there.
  virtual asio::any_io_executor executor() = 0;
  // "ip:port" of the client, and of the address it came to (CLIENT LIST's addr, laddr).
  virtual std::string peer() = 0;
  virtual std::string local() = 0;
  // Ready to serve: at once for a plain stream, after the TLS handshake (within
  // `deadline_ms`; failures counted in `counters`, the stream closed) for a TLS one.
  virtual void secure(std::shared_ptr<Owner> owner, int64_t deadline_ms, TlsCounters* counters,
                      std::function<void(bool)> done) = 0;
  // Reads what has arrived (at least one byte, at most `n`) into `into`; then on_read.
  virtual void read_some(char* into, size_t n, std::shared_ptr<Owner> owner) = 0;
  // Writes `out` as far as it goes now, and clears it. True if it all went, or the stream
  // failed (`ec`); false if the rest is written in the background, on_written to follow.
  // One write at a time.
  virtual bool write(std::string& out, asio::error_code& ec, std::shared_ptr<Owner> owner) = 0;
  // What write() still holds: bytes not yet sent, and the memory that holds them.
  virtual size_t unsent_bytes() const = 0;
  virtual size_t held_bytes() const = 0;
  // Closes both directions (errors no longer matter); pending operations end with errors.
  virtual void shut() = 0;
  // From the next read on, learn when the input reached the host (the kernel's receive
  // stamp); false if this stream cannot (TLS, in-memory streams).
  virtual bool stamp_input() { return false; }
  // When the newest bytes of the last read reached the host: CLOCK_REALTIME ns, 0 unknown.
  virtual int64_t received_ns() const { return 0; }
};

// A TCP connection the node accepted, with TLS over it when `tls` is set.
std::unique_ptr<ClientStream> make_socket_stream(asio::ip::tcp::socket sock,
                                                 std::shared_ptr<asio::ssl::context> tls);

}  // namespace fg
