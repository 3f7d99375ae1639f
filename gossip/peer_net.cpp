#include "peer_net.hpp"

#include <algorithm>

#include "peer_link.hpp"

namespace fg {

std::unique_ptr<PeerListener> TcpPeerNet::listen(asio::io_context& io, const std::string& host,
                                                 uint16_t port, PeerHandler handler) {
  return std::make_unique<PeerServer>(io, host, port, std::move(handler), key_, tls_);
}

std::shared_ptr<PeerLink> TcpPeerNet::connect(asio::io_context& io, const std::string& addr) {
  return std::make_shared<PeerClient>(io, addr, local_host_, key_, tls_);
}

// The net of one node (its address is who calls through it).
class MemoryPeerHub::Net final : public PeerNet {
 public:
  Net(MemoryPeerHub& hub, std::string addr) : hub_(hub), addr_(std::move(addr)) {}
  std::unique_ptr<PeerListener> listen(asio::io_context& io, const std::string& host, uint16_t port,
                                       PeerHandler handler) override;
  std::shared_ptr<PeerLink> connect(asio::io_context& io, const std::string& to) override;

 private:
  MemoryPeerHub& hub_;
  std::string addr_;
};

class MemoryPeerHub::Listener final : public PeerListener {
 public:
  Listener(MemoryPeerHub& hub, std::string addr) : hub_(hub), addr_(std::move(addr)) {}
  ~Listener() override { close(); }
  void close() override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    hub_.listening_.erase(addr_);
  }

 private:
  MemoryPeerHub& hub_;
  std::string addr_;
};

class MemoryPeerHub::Link final : public PeerLink,
                                  public std::enable_shared_from_this<MemoryPeerHub::Link> {
 public:
  Link(MemoryPeerHub& hub, asio::io_context& io, std::string from, std::string to)
      : hub_(hub), io_(io), from_(std::move(from)), to_(std::move(to)) {}

  void call(uint32_t kind, std::string body, std::chrono::milliseconds deadline,
            PeerCallback cb) override {
    auto self = shared_from_this();
    asio::dispatch(io_,
                   [self, kind, body = std::move(body), deadline, cb = std::move(cb)]() mutable {
                     self->start(kind, std::move(body), deadline, std::move(cb));
                   });
  }
  void start(uint32_t kind, std::string body, std::chrono::milliseconds deadline, PeerCallback cb) {
    auto c = std::make_shared<Call>(io_);
    c->cb = std::move(cb);
    const uint64_t id = next_++;
    pending_[id] = c;
    auto self = shared_from_this();
    Endpoint at;
    if (closed_ || !hub_.reach(from_, to_, at)) {
      asio::post(io_, [self, id] { self->finish(id, PeerStatus::kUnavailable, {}); });
      return;
    }
    c->timer.expires_after(deadline);
    c->timer.async_wait([self, id](asio::error_code ec) {
      if (!ec) self->finish(id, PeerStatus::kTimeout, {});
    });
    hub_.count(kind, true, body.size());
    auto deliver = [self, id, kind, body = std::move(body), handler = at.handler]() mutable {
      (*handler)(kind, std::move(body),
                 [self, id, kind](PeerStatus st, std::string b, std::string) {
                   if (self->hub_.cut_between(self->to_, self->from_))
                     return;  // the answer is lost
                   self->hub_.count(kind, false, b.size());
                   // Not after close(): the caller's io_context may be gone by then.
                   std::lock_guard<std::mutex> lock(self->close_mu_);
                   if (self->closed_) return;
                   asio::post(self->io_, [self, id, st, b = std::move(b)]() mutable {
                     self->finish(id, st, std::move(b));
                   });
                 });
    };
    const int64_t at_ns = hub_.arrival_ns(from_, to_);
    if (at_ns == 0) {
      asio::post(*at.io, std::move(deliver));
      return;
    }
    auto timer = std::make_shared<SteadyTimer>(
        *at.io, TimerClock::time_point(std::chrono::nanoseconds(at_ns)));
    timer->async_wait([timer, deliver = std::move(deliver)](asio::error_code ec) mutable {
      if (!ec) deliver();
    });
  }
  void abort_calls() override {
    auto self = shared_from_this();
    asio::post(io_, [self] {
      std::vector<uint64_t> ids;
      for (const auto& [id, c] : self->pending_) ids.push_back(id);
      for (uint64_t id : ids) self->finish(id, PeerStatus::kTimeout, {});
    });
  }
  void close() override {
    {
      std::lock_guard<std::mutex> lock(close_mu_);
      closed_ = true;
    }
    abort_calls();
  }

 private:
  struct Call {
    explicit Call(asio::io_context& io) : timer(io) {}
    PeerCallback cb;
    SteadyTimer timer;
  };
  // On the caller's io_context: the first outcome of a call wins.
  void finish(uint64_t id, PeerStatus st, std::string body) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto c = std::move(it->second);
    pending_.erase(it);
    c->timer.cancel();
    c->cb(st, std::move(body));
  }

  MemoryPeerHub& hub_;
  asio::io_context& io_;
  std::string from_, to_;
  std::map<uint64_t, std::shared_ptr<Call>> pending_;  // (the caller's thread only)
  uint64_t next_ = 1;
  std::mutex close_mu_;
  std::atomic<bool> closed_{false};
};

std::unique_ptr<PeerListener> MemoryPeerHub::Net::listen(asio::io_context& io,
                                                         const std::string& host, uint16_t port,
                                                         PeerHandler handler) {
  const std::string addr = host + ":" + std::to_string(port);
  std::lock_guard<std::mutex> lock(hub_.mu_);
  if (hub_.listening_.count(addr)) {
    throw std::system_error(std::make_error_code(std::errc::address_in_use), addr);
  }
  hub_.listening_[addr] = {&io, std::make_shared<PeerHandler>(std::move(handler))};
  return std::make_unique<Listener>(hub_, addr);
}

std::shared_ptr<PeerLink> MemoryPeerHub::Net::connect(asio::io_context& io, const std::string& to) {
  return std::make_shared<Link>(hub_, io, addr_, to);
}

MemoryPeerHub::MemoryPeerHub() = default;
MemoryPeerHub::~MemoryPeerHub() = default;

PeerNet& MemoryPeerHub::node(const std::string& addr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& n = nets_[addr];
  if (!n) n = std::make_unique<Net>(*this, addr);
  return *n;
}

void MemoryPeerHub::cut(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.insert({from, to});
}

void MemoryPeerHub::heal() {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
}

void MemoryPeerHub::set_delay(std::chrono::nanoseconds max_delay, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  max_delay_ns_ = max_delay.count();
  delays_.seed(seed);
  link_free_at_ns_.clear();
}

int64_t MemoryPeerHub::arrival_ns(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_delay_ns_ <= 0) return 0;
  const int64_t now = TimerClock::now().time_since_epoch().count();
  int64_t& free_at = link_free_at_ns_[{from, to}];
  // (strictly after the link's previous call: timers due at one instant fire in no set order)
  free_at =
      std::max(free_at + 1, now + static_cast<int64_t>(delays_() % uint64_t(max_delay_ns_ + 1)));
  return free_at;
}

void MemoryPeerHub::count(uint32_t kind, bool call, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Traffic& t = traffic_[kind];
  t.calls += call;
  (call ? t.request_bytes : t.answer_bytes) += bytes;
}

std::map<uint32_t, MemoryPeerHub::Traffic> MemoryPeerHub::traffic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return traffic_;
}

uint64_t MemoryPeerHub::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

bool MemoryPeerHub::cut_between(const std::string& from, const std::string& to) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cuts_.count({from, to}) > 0;
}

bool MemoryPeerHub::reach(const std::string& from, const std::string& to, Endpoint& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cuts_.count({from, to})) return false;
  auto it = listening_.find(to);
  if (it == listening_.end()) return false;
  out = it->second;
  ++calls_;
  return true;
}

}  // namespace fg
