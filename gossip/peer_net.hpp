// The network peer requests travel (hand-offs, replication, forwards, merges, the settings
// book): a node listens at its bus address and calls other nodes' addresses. Real nodes
// use TCP (`TcpPeerNet`: peer_link's PeerClient and PeerServer, with the cluster secret
// and TLS); tests and simulations use `MemoryPeerHub`, which delivers calls between
// nodes in one process and cuts links one way or both, on purpose.
#pragma once
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>

#include "timer.hpp"

namespace fg {

class BusKey;
class TlsContexts;

enum class PeerStatus { kOk, kError, kUnknownKind, kUnavailable, kTimeout };
using PeerCallback = std::function<void(PeerStatus, std::string body)>;
// A request's answer (now or later, on the listener's io_context thread).
using PeerRespond = std::function<void(PeerStatus, std::string body, std::string error)>;
using PeerHandler = std::function<void(uint32_t kind, std::string body, PeerRespond respond)>;

// Calls to one peer. `cb` runs on the caller's io_context: the answer, an error,
// kUnavailable (cannot reach it) or kTimeout (no answer by the deadline).
class PeerLink {
 public:
  virtual ~PeerLink() = default;
  virtual void call(uint32_t kind, std::string body, std::chrono::milliseconds deadline,
                    PeerCallback cb) = 0;
  // The peer was declared dead: calls waiting on it end now with kTimeout.
  virtual void abort_calls() = 0;
  virtual void close() = 0;
};

class PeerListener {
 public:
  virtual ~PeerListener() = default;
  virtual void close() = 0;
};

class PeerNet {
 public:
  virtual ~PeerNet() = default;
  // Serves requests to `host:port` with `handler` on `io`; throws std::system_error when
  // the address cannot be had.
  virtual std::unique_ptr<PeerListener> listen(asio::io_context& io, const std::string& host,
                                               uint16_t port, PeerHandler handler) = 0;
  // A link to the node at `addr` ("host:port"), its callbacks on `io`.
  virtual std::shared_ptr<PeerLink> connect(asio::io_context& io, const std::string& addr) = 0;
};

// TCP, as nodes run: connections leave from `local_host`, prove the cluster secret (`key`,
// may be null) and speak mutual TLS (`tls`, may be null). Both must outlive the net.
class TcpPeerNet final : public PeerNet {
 public:
  TcpPeerNet(std::string local_host, BusKey* key, TlsContexts* tls)
      : local_host_(std::move(local_host)), key_(key), tls_(tls) {}
  std::unique_ptr<PeerListener> listen(asio::io_context& io, const std::string& host, uint16_t port,
                                       PeerHandler handler) override;
  std::shared_ptr<PeerLink> connect(asio::io_context& io, const std::string& addr) override;

 private:
  std::string local_host_;
  BusKey* key_;
  TlsContexts* tls_;
};

// Peer requests between nodes of one process. Each node takes the net of its own address
// (`node(addr)`); a call crosses to the listener's io_context and its answer comes back on
// the caller's. A cut from A to B loses A's calls to B (kUnavailable, as a refused
// connection); a cut from B to A loses B's answers to A (the call times out). Thread-safe.
class MemoryPeerHub {
 public:
  // (The hub outlives every node using it.)
  MemoryPeerHub();
  ~MemoryPeerHub();
  PeerNet& node(const std::string& addr);
  void cut(const std::string& from, const std::string& to);
  void heal();
  // Each call reaches its listener after a delay drawn up to `max_delay` from `seed`, in
  // the order it was made between the same two nodes (as on one connection); 0 ends it.
  // heal() keeps it.
  void set_delay(std::chrono::nanoseconds max_delay, uint64_t seed = 1);
  uint64_t calls() const;  // calls delivered to a listener
  // Bytes of the bodies of calls delivered and of their answers, by request kind (a TCP
  // peer link adds a few bytes of framing to each).
  struct Traffic {
    uint64_t calls = 0, request_bytes = 0, answer_bytes = 0;
  };
  std::map<uint32_t, Traffic> traffic() const;

 private:
  class Net;
  class Link;
  class Listener;
  struct Endpoint {
    asio::io_context* io = nullptr;
    std::shared_ptr<PeerHandler> handler;
  };
  bool cut_between(const std::string& from, const std::string& to) const;
  // The listener at `addr`, if any and not cut off from `from`.
  bool reach(const std::string& from, const std::string& to, Endpoint& out) const;

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Net>> nets_;
  std::map<std::string, Endpoint> listening_;
  std::set<std::pair<std::string, std::string>> cuts_;
  mutable uint64_t calls_ = 0;
  std::map<uint32_t, Traffic> traffic_;
  void count(uint32_t kind, bool call, size_t bytes);  // a call's body, or an answer's
  int64_t max_delay_ns_ = 0;
  std::mt19937_64 delays_;
  std::map<std::pair<std::string, std::string>, int64_t> link_free_at_ns_;  // (FIFO per link)
  // When a call made now from `from` reaches `to` (TimerClock ns; 0: at once).
  int64_t arrival_ns(const std::string& from, const std::string& to);
};

}  // namespace fg
