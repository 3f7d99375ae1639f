#include "datagram_net.hpp"

#include <algorithm>

#include "bus_key.hpp"
#include "udp_transport.hpp"

namespace fg {

std::unique_ptr<DatagramPort> UdpDatagramNet::open(asio::io_context& io, const std::string& host,
                                                   uint16_t port, BusKey* key, Handler handler) {
  return std::make_unique<UdpTransport>(io, host, port, std::move(handler), key);
}

class MemoryDatagramHub::Port final : public DatagramPort {
 public:
  Port(MemoryDatagramHub& hub, std::string addr, BusKey* key, Handler handler)
      : hub_(hub), addr_(std::move(addr)), key_(key), handler_(std::move(handler)) {}
  ~Port() override { close(); }
  void send(const std::string& to, std::string_view bytes) override {
    if (closed_) return;
    hub_.send(addr_, to, key_ && key_->active() ? key_->seal(bytes) : std::string(bytes));
  }
  void close() override {
    if (closed_.exchange(true)) return;
    hub_.closed(addr_, this);
  }
  // On the receiver's io_context thread.
  void receive(const std::string& from, const std::string& bytes) {
    if (closed_) return;
    if (key_ && key_->active()) {
      const auto opened = key_->open(bytes);
      if (opened) handler_(from, *opened);  // (refusals are counted by the key)
      return;
    }
    handler_(from, bytes);
  }

 private:
  MemoryDatagramHub& hub_;
  std::string addr_;
  BusKey* key_;
  Handler handler_;
  std::atomic<bool> closed_{false};
};

MemoryDatagramHub::MemoryDatagramHub() = default;
MemoryDatagramHub::~MemoryDatagramHub() = default;

std::unique_ptr<DatagramPort> MemoryDatagramHub::open(asio::io_context& io, const std::string& host,
                                                      uint16_t port, BusKey* key, Handler handler) {
  const std::string addr = host + ":" + std::to_string(port);
  auto p = std::make_unique<Port>(*this, addr, key, std::move(handler));
  std::lock_guard<std::mutex> lock(mu_);
  if (open_.count(addr)) {
    throw std::system_error(std::make_error_code(std::errc::address_in_use), addr);
  }
  open_[addr] = {&io, p.get()};
  return p;
}

void MemoryDatagramHub::send(const std::string& from, const std::string& to, std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  largest_ = std::max(largest_, bytes.size());
  if (cuts_.count({from, to}) || isolated_.count(from) || isolated_.count(to)) return;
  auto it = open_.find(to);
  if (it == open_.end()) return;
  if (loss_ > 0 && std::uniform_real_distribution<double>(0, 1)(weather_) < loss_) return;
  const int64_t delay_ns =
      max_delay_ns_ > 0 ? static_cast<int64_t>(weather_() % uint64_t(max_delay_ns_ + 1)) : 0;
  ++delivered_;
  delivered_bytes_ += bytes.size();
  // Posted while the port is open (closing takes this lock): its io_context still runs.
  Port* port = it->second.port;
  auto deliver = [this, port, to, from, bytes = std::move(bytes)] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto at = open_.find(to);
      if (at == open_.end() || at->second.port != port) return;  // closed meanwhile
    }
    port->receive(from, bytes);
  };
  if (delay_ns == 0) {
    asio::post(*it->second.io, std::move(deliver));
    return;
  }
  auto timer = std::make_shared<SteadyTimer>(*it->second.io, std::chrono::nanoseconds(delay_ns));
  timer->async_wait([timer, deliver = std::move(deliver)](asio::error_code ec) {
    if (!ec) deliver();
  });
}

void MemoryDatagramHub::set_weather(double loss, std::chrono::nanoseconds max_delay,
                                    uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  loss_ = loss;
  max_delay_ns_ = max_delay.count();
  weather_.seed(seed);
}

void MemoryDatagramHub::closed(const std::string& addr, Port* port) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(addr);
  if (it != open_.end() && it->second.port == port) open_.erase(it);
}

void MemoryDatagramHub::cut(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.insert({from, to});
}

void MemoryDatagramHub::isolate(const std::string& addr) {
  std::lock_guard<std::mutex> lock(mu_);
  isolated_.insert(addr);
}

void MemoryDatagramHub::heal() {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
  isolated_.clear();
}

uint64_t MemoryDatagramHub::delivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delivered_;
}

size_t MemoryDatagramHub::largest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return largest_;
}

uint64_t MemoryDatagramHub::delivered_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delivered_bytes_;
}

}  // namespace fg
