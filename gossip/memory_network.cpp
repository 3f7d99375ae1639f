// The simulated network's queue.
#include "memory_network.hpp"

#include <algorithm>

namespace fg {

Transport& MemoryNetwork::attach(const std::string& addr, Handler handler) {
  handlers_[addr] = std::move(handler);
  auto& port = ports_[addr];
  if (!port) port = std::make_unique<Port>(this, addr);
  return *port;
}

void MemoryNetwork::detach(const std::string& addr) { handlers_.erase(addr); }

void MemoryNetwork::Port::send(const std::string& to, std::string_view bytes) {
  net_->enqueue(addr_, to, bytes);
}

void MemoryNetwork::enqueue(const std::string& from, const std::string& to,
                            std::string_view bytes) {
  ++sent_;
  largest_ = std::max(largest_, bytes.size());
  if (!handlers_.count(from) || cuts_.count({from, to}) ||
      std::uniform_real_distribution<double>(0, 1)(rng_) < loss_) {
    return;
  }
  const int64_t delay = std::uniform_int_distribution<int64_t>(delay_min_, delay_max_)(rng_);
  queue_.push(InFlight{now_ + delay, order_++, from, to, std::string(bytes)});
}

void MemoryNetwork::deliver_until(int64_t now_ns) {
  while (!queue_.empty() && queue_.top().at <= now_ns) {
    InFlight m = queue_.top();
    queue_.pop();
    now_ = m.at;
    auto h = handlers_.find(m.to);
    if (h != handlers_.end()) h->second(m.from, m.bytes);
  }
  now_ = now_ns;
}

}  // namespace fg
