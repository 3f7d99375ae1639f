// An in-memory datagram network for deterministic multi-node tests: per-message delay,
// random loss, one-way or two-way cuts, all driven by a simulated clock.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "transport.hpp"

namespace fg {

class MemoryNetwork {
 public:
  using Handler = std::function<void(const std::string& from, const std::string& bytes)>;

  explicit MemoryNetwork(uint64_t seed = 1) : rng_(seed) {}

  // The transport a node at `addr` sends with; `handler` receives what reaches `addr`.
  Transport& attach(const std::string& addr, Handler handler);
  void detach(const std::string& addr);  // a crashed node: nothing in, nothing out

  void set_loss(double p) { loss_ = p; }
  void set_delay_ns(int64_t min_ns, int64_t max_ns) { delay_min_ = min_ns, delay_max_ = max_ns; }
  void cut(const std::string& from, const std::string& to) { cuts_.insert({from, to}); }
  void heal() { cuts_.clear(); }

  // Delivers every message due at or before `now_ns`, in time order.
  void deliver_until(int64_t now_ns);
  uint64_t sent() const { return sent_; }
  size_t largest() const { return largest_; }  // the largest datagram sent

 private:
  class Port : public Transport {
   public:
    Port(MemoryNetwork* net, std::string addr) : net_(net), addr_(std::move(addr)) {}
    void send(const std::string& to, std::string_view bytes) override;

   private:
    MemoryNetwork* net_;
    std::string addr_;
  };
  struct InFlight {
    int64_t at;
    uint64_t order;
    std::string from, to, bytes;
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  void enqueue(const std::string& from, const std::string& to, std::string_view bytes);

  std::mt19937_64 rng_;
  double loss_ = 0;
  int64_t delay_min_ = 200'000, delay_max_ = 2'000'000;  // 0.2-2 ms
  int64_t now_ = 0;
  uint64_t order_ = 0, sent_ = 0;
  size_t largest_ = 0;
  std::map<std::string, Handler> handlers_;
  std::map<std::string, std::unique_ptr<Port>> ports_;
  std::set<std::pair<std::string, std::string>> cuts_;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> queue_;
};

}  // namespace fg
