// The network gossip datagrams travel, as the cluster sees it: a node opens a port at its
// bus address and sends to others' addresses. Real nodes use UDP (`UdpDatagramNet`:
// udp_transport); nodes of one process can use `MemoryDatagramHub`, which delivers on
// the receiver's io_context and loses, on purpose, what crosses a cut. Both seal and open
// datagrams with the cluster secret when one is set. (`MemoryNetwork` is the other
// in-memory datagram network: single-threaded, on a simulated clock, for Membership alone.)
#pragma once
#include <asio.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "timer.hpp"
#include "transport.hpp"

namespace fg {

class BusKey;

class DatagramPort : public Transport {
 public:
  virtual void close() = 0;
};

class DatagramNet {
 public:
  using Handler = std::function<void(const std::string& from, std::string_view bytes)>;
  virtual ~DatagramNet() = default;
  // Opens host:port; `handler` runs on `io`'s thread for every datagram that arrives (and
  // opens with `key`, when it holds a secret; `key` may be null and must outlive the
  // port). Throws std::system_error when the address cannot be had.
  virtual std::unique_ptr<DatagramPort> open(asio::io_context& io, const std::string& host,
                                             uint16_t port, BusKey* key, Handler handler) = 0;
};

class UdpDatagramNet final : public DatagramNet {
 public:
  std::unique_ptr<DatagramPort> open(asio::io_context& io, const std::string& host, uint16_t port,
                                     BusKey* key, Handler handler) override;
};

// Datagrams between nodes of one process. A cut from A to B loses what A sends to B;
// `isolate(addr)` cuts a node off both ways. Thread-safe; outlives every node using it.
class MemoryDatagramHub final : public DatagramNet {
 public:
  MemoryDatagramHub();
  ~MemoryDatagramHub() override;
  std::unique_ptr<DatagramPort> open(asio::io_context& io, const std::string& host, uint16_t port,
                                     BusKey* key, Handler handler) override;
  void cut(const std::string& from, const std::string& to);
  void isolate(const std::string& addr);
  void heal();
  // Every datagram is lost with probability `loss` and, of the rest, each waits a delay
  // drawn up to `max_delay` (so they also come out of order); the draws come from `seed`.
  // heal() leaves these as they are; set_weather(0, 0) ends them.
  void set_weather(double loss, std::chrono::nanoseconds max_delay, uint64_t seed = 1);
  uint64_t delivered() const;
  uint64_t delivered_bytes() const;  // their payloads (a UDP datagram adds 28 bytes of headers)
  size_t largest() const;            // the largest payload sent (a datagram over ~1472 bytes
                                     // is fragmented by IP; over 65507 it cannot be sent)

 private:
  class Port;
  struct Receiver {
    asio::io_context* io = nullptr;
    Port* port = nullptr;
  };
  void send(const std::string& from, const std::string& to, std::string bytes);
  void closed(const std::string& addr, Port* port);

  mutable std::mutex mu_;
  std::map<std::string, Receiver> open_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::set<std::string> isolated_;
  uint64_t delivered_ = 0;
  uint64_t delivered_bytes_ = 0;
  size_t largest_ = 0;
  double loss_ = 0;
  int64_t max_delay_ns_ = 0;
  std::mt19937_64 weather_;
};

}  // namespace fg
