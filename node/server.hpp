// The RESP listener and the I/O threads: one io_context per thread, connections spread
// over them round-robin, each connection served by one thread only (no strands needed).
#pragma once
#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client_connection.hpp"
#include "services.hpp"

namespace fg {

class Server {
 public:
  // `polled`: the simulator's node (node.hpp, NodeRun): the listen calls bind nothing and
  // take their ports as names, and the owner polls the loops instead of run().
  Server(Services& svc, std::shared_ptr<const ConnectionLimits> limits, int io_threads,
         bool polled = false);
  ~Server();

  // Binds every address in `bind` (space-separated, as redis.conf) on `port`.
  // Throws std::system_error when an address cannot be bound. Port 0 picks a free port.
  void listen(const std::string& bind, int port);
  // The same for RESP over TLS (tls-port), with the contexts of `tls` (set_tls first).
  void listen_tls(const std::string& bind, int port);
  // The same for the native protocol (api/native.proto), over TLS if `tls`.
  void listen_native(const std::string& bind, int port, bool tls = false);
  // The same for the gateway door (gRPC over HTTP/2: api/rls/grpc_session.hpp; services.gateway
  // set first), over TLS with ALPN "h2" if `tls`.
  void listen_rls(const std::string& bind, int port, bool tls = false);
  // A client connection on a stream of the caller's making (`make` gets the event loop it
  // will run on): the simulator's in-memory clients (tests/sim/memory_stream.hpp).
  // Which door a connection came in by.
  enum class DoorKind : uint8_t { kResp, kNative, kGateway };
  void adopt(const std::function<std::unique_ptr<ClientStream>(asio::any_io_executor)>& make,
             DoorKind door = DoorKind::kResp);
  // Where TLS ports take their contexts from, each connection the one in force when it came.
  void set_tls(TlsContexts* tls) { tls_ = tls; }
  int port() const { return port_; }
  int tls_port() const { return tls_port_; }
  int native_port() const { return native_port_; }
  int rls_port() const { return rls_port_; }
  // io-idle-poll-us: how long an I/O thread out of work keeps polling before it sleeps
  // (run_io_loop). Before run().
  void set_idle_poll(std::chrono::microseconds d) { idle_poll_ = d; }
  void run();  // starts the I/O threads; returns at once
  // Instead of run(), for an owner that drives the I/O loops itself (the simulator): runs
  // what is ready on each loop, without waiting; how many handlers ran. With `has_ready`,
  // only the loops it says have a handler ready (an empty poll still takes the loop's lock).
  size_t poll(bool (*has_ready)(asio::io_context&) = nullptr);
  void stop();  // closes listeners and stops the threads
  asio::io_context& main_context() { return *contexts_[0]; }
  // The I/O threads, for work that is no client's (forwarded requests, lease upkeep).
  std::vector<Lane> lanes() const;
  // Empty while every I/O thread runs its loop; else which one has not come back to it for
  // at least `bound_ms` (a handler that does not return: /healthz and /readyz say so).
  // Each thread marks a heartbeat every kHeartbeatMs (after run()).
  std::string stuck_thread(int64_t bound_ms) const;
  static constexpr int64_t kHeartbeatMs = 250;

 private:
  int bind_all(const std::string& bind, int port, DoorKind door, bool tls);
  void accept(asio::ip::tcp::acceptor& acc, DoorKind door, bool tls);
  void start_connection(asio::io_context& ctx, IoBatcher& batcher,
                        std::unique_ptr<ClientStream> stream, DoorKind door);

  Services& svc_;
  std::shared_ptr<const ConnectionLimits> limits_;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<std::unique_ptr<IoBatcher>> batchers_;  // one per I/O thread
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::vector<std::thread> threads_;
  // Per I/O thread: its heartbeat timer, and when it last fired (steady clock ns).
  std::vector<std::unique_ptr<asio::steady_timer>> beats_;
  std::unique_ptr<std::atomic<int64_t>[]> beat_ns_;
  void beat(size_t i);
  size_t next_ = 0;
  TlsContexts* tls_ = nullptr;
  int port_ = 0;
  int tls_port_ = 0;
  int native_port_ = 0;
  int rls_port_ = 0;
  bool polled_ = false;
  std::chrono::microseconds idle_poll_{0};
};

// An I/O thread's loop until `ctx` stops. With `idle_poll` zero it is ctx.run(): out of
// work, the thread sleeps in epoll_wait and the next packet's sender pays to wake it. With
// `idle_poll` above zero, a thread out of work keeps polling its sockets and timers that
// long before it sleeps: CPU spent so that a request arriving within it finds the thread
// awake (node/README.md, Threads and cores). Counts each idle poll in `counters`.
void run_io_loop(asio::io_context& ctx, std::chrono::nanoseconds idle_poll, NodeCounters& counters);

}  // namespace fg
