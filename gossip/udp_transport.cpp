// UDP sockets and the membership tick loop.
#include "udp_transport.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "clock.hpp"
#include "membership.hpp"

namespace fg {

int64_t wall_now_ns() { return SystemClock::process().now_ns(); }

UdpTransport::UdpTransport(asio::io_context& io, const std::string& host, uint16_t port,
                           Handler handler, BusKey* key)
    : socket_(io), handler_(std::move(handler)), key_(key), host_(host), buf_(65536, '\0') {
  asio::ip::udp::endpoint ep(asio::ip::make_address(host), port);
  socket_.open(ep.protocol());
  socket_.bind(ep);
  socket_.non_blocking(true);
  receive();
}

std::string UdpTransport::local_addr() const {
  return host_ + ":" + std::to_string(socket_.local_endpoint().port());
}

void UdpTransport::close() {
  asio::error_code ec;
  socket_.close(ec);
}

asio::ip::udp::endpoint UdpTransport::resolve(const std::string& addr) {
  const auto now = TimerClock::now();
  auto it = endpoints_.find(addr);
  if (it != endpoints_.end() && it->second.until > now) return it->second.ep;
  const auto colon = addr.rfind(':');
  asio::error_code ec;
  Resolved r{asio::ip::udp::endpoint(), now + std::chrono::hours(24)};
  if (colon != std::string::npos) {
    const std::string host = addr.substr(0, colon), port = addr.substr(colon + 1);
    auto ip = asio::ip::make_address(host, ec);
    if (!ec) {
      r.ep = {ip, static_cast<uint16_t>(std::atoi(port.c_str()))};
    } else {
      // A name (only seeds are): ask DNS, again in 10 s, or in 1 s if it failed.
      asio::ip::udp::resolver resolver(socket_.get_executor());
      auto results = resolver.resolve(asio::ip::udp::v4(), host, port, ec);
      r.until = now + std::chrono::seconds(1);
      if (!ec && !results.empty()) {
        r.ep = results.begin()->endpoint();
        r.until = now + std::chrono::seconds(10);
      }
    }
  }
  if (endpoints_.size() > 4096) endpoints_.clear();  // bounded cache
  endpoints_[addr] = r;
  return r.ep;
}

void UdpTransport::send(const std::string& to_addr, std::string_view bytes) {
  const auto ep = resolve(to_addr);
  if (ep.port() == 0 || !socket_.is_open()) return;
  asio::error_code ec;
  if (key_ && key_->active()) {
    const std::string sealed = key_->seal(bytes);
    socket_.send_to(asio::buffer(sealed), ep, 0, ec);  // EAGAIN: dropped
    return;
  }
  socket_.send_to(asio::buffer(bytes.data(), bytes.size()), ep, 0, ec);
}

void UdpTransport::receive() {
  socket_.async_receive_from(asio::buffer(buf_), from_, [this](asio::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted || !socket_.is_open()) return;
    if (!ec) {
      std::string from = from_.address().to_string() + ":" + std::to_string(from_.port());
      std::string_view bytes(buf_.data(), n);
      if (key_ && key_->active()) {
        const auto opened = key_->open(bytes);
        if (!opened) {
          const BusCounters& c = key_->counters();
          const uint64_t refused =
              c.refused_unsealed + c.refused_bad_mac + c.refused_stale + c.refused_replay;
          if ((refused & (refused - 1)) == 0) {  // (the 1st, 2nd, 4th, 8th...: not a flood)
            spdlog::warn(
                "cluster bus: refused a datagram from {} without the cluster secret "
                "({} refused so far)",
                from, refused);
          }
          return receive();
        }
        bytes = *opened;
      }
      handler_(from, bytes);
    }
    receive();
  });
}

MembershipRunner::MembershipRunner(asio::io_context& io, Membership& m, int64_t tick_ms)
    : timer_(io), m_(m), tick_ms_(tick_ms) {}

void MembershipRunner::start(const std::vector<std::string>& seeds) {
  m_.join(seeds, wall_now_ns());
  arm();
}

void MembershipRunner::stop() {
  stopped_ = true;
  timer_.cancel();
}

void MembershipRunner::arm() {
  timer_.expires_after(std::chrono::milliseconds(tick_ms_));
  timer_.async_wait([this](asio::error_code ec) {
    if (ec || stopped_) return;
    m_.tick(wall_now_ns());
    arm();
  });
}

}  // namespace fg
