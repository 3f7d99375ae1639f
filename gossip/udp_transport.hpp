// Gossip datagrams over UDP with Asio. Sends never block; what cannot be sent is dropped,
// which SWIM tolerates by design.
#pragma once
#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "bus_key.hpp"
#include "datagram_net.hpp"

namespace fg {

class UdpTransport final : public DatagramPort {
 public:
  using Handler = std::function<void(const std::string& from, std::string_view bytes)>;

  // Binds host:port (port 0 picks one). `handler` runs on `io`'s thread for every datagram.
  // `key` (may be null, must outlive the transport): with a secret set, what is sent is
  // sealed with it and only what it opens reaches `handler`.
  UdpTransport(asio::io_context& io, const std::string& host, uint16_t port, Handler handler,
               BusKey* key = nullptr);
  void send(const std::string& to_addr, std::string_view bytes) override;
  void close() override;
  std::string local_addr() const;  // host:port actually bound

 private:
  void receive();
  asio::ip::udp::endpoint resolve(const std::string& addr);

  asio::ip::udp::socket socket_;
  Handler handler_;
  BusKey* key_;
  std::string host_;
  asio::ip::udp::endpoint from_;
  std::string buf_;
  struct Resolved {
    asio::ip::udp::endpoint ep;  // port 0: could not resolve
    TimerClock::time_point until;
  };
  // Addresses are IPs, except seeds, which may be DNS names (a Kubernetes headless
  // Service): those are looked up again after a while, as pods come and go.
  std::map<std::string, Resolved> endpoints_;
};

// Runs one Membership on an io_context: ticks it on a timer, feeds it datagrams.
class MembershipRunner {
 public:
  MembershipRunner(asio::io_context& io, class Membership& m, int64_t tick_ms = 10);
  void start(const std::vector<std::string>& seeds);
  void stop();

 private:
  void arm();
  SteadyTimer timer_;
  Membership& m_;
  int64_t tick_ms_;
  bool stopped_ = false;
};

int64_t wall_now_ns();

}  // namespace fg
