// A simulated cluster for gossip tests: N nodes (membership, and a table agreement each)
// on a MemoryNetwork, driven by a simulated clock in 5 ms steps.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "membership.hpp"
#include "memory_network.hpp"
#include "table_agreement.hpp"

namespace fg {

constexpr int64_t kMs = 1'000'000;

class SimCluster {
 public:
  explicit SimCluster(size_t n, uint64_t seed = 1, MembershipConfig cfg = {})
      : net_(seed), cfg_(cfg) {
    for (size_t i = 0; i < n; ++i) add(seed);
  }

  size_t add(uint64_t seed = 7) {
    const size_t i = nodes_.size();
    nodes_.push_back(make(i, seed));
    agreements_.push_back(std::make_unique<TableAgreement>(*nodes_[i], kSettleNs));
    alive_.push_back(true);
    nodes_[i]->join({addr(0)}, now_);
    return i;
  }

  static std::string id(size_t i) { return "node-" + std::to_string(i); }
  static std::string addr(size_t i) { return "10.0.0." + std::to_string(i + 1) + ":7946"; }

  void run_ms(int64_t ms) {
    const int64_t end = now_ + ms * kMs;
    while (now_ < end) {
      now_ += 5 * kMs;
      net_.deliver_until(now_);
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!alive_[i]) continue;
        nodes_[i]->tick(now_);
        agreements_[i]->tick(now_);
      }
      if (on_step) on_step();
    }
  }
  std::function<void()> on_step;  // after every 5 ms step
  // Cuts every link between the two groups, both ways, until net().heal().
  void partition(const std::vector<size_t>& a, const std::vector<size_t>& b) {
    for (size_t x : a)
      for (size_t y : b) {
        net_.cut(addr(x), addr(y));
        net_.cut(addr(y), addr(x));
      }
  }
  void crash(size_t i) {
    alive_[i] = false;
    net_.detach(addr(i));
  }
  // A crashed node comes back with the same id and no memory (incarnation 0).
  void restart(size_t i, uint64_t seed = 99) {
    agreements_[i].reset();
    nodes_[i] = make(i, seed);
    agreements_[i] = std::make_unique<TableAgreement>(*nodes_[i], kSettleNs);
    alive_[i] = true;
    nodes_[i]->join({addr(i == 0 ? 1 : 0)}, now_);
  }
  // Whether node `observer` sees node `subject` in `state`.
  bool sees(size_t observer, size_t subject, MemberState state) const {
    const auto& o = nodes_[observer]->others();
    auto it = o.find(id(subject));
    return it != o.end() && it->second.state == state;
  }
  bool everyone_sees(size_t subject, MemberState state) const {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (alive_[i] && i != subject && !sees(i, subject, state)) return false;
    return true;
  }
  std::string dump() const {
    std::string out;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      out += nodes_[i]->self().id + (alive_[i] ? "" : "(down)") + ":";
      for (const auto& [id, m] : nodes_[i]->others())
        out +=
            " " + id + "=" + std::string(state_name(m.state)) + "/" + std::to_string(m.incarnation);
      out += "\n";
    }
    return out;
  }
  bool converged() const {
    for (size_t s = 0; s < nodes_.size(); ++s)
      if (alive_[s] && !everyone_sees(s, MemberState::kAlive)) return false;
    return true;
  }
  Membership& node(size_t i) { return *nodes_[i]; }
  MemoryNetwork& net() { return net_; }
  int64_t now() const { return now_; }
  int deaths_seen = 0;  // dead transitions observed anywhere

  TableAgreement& agreement(size_t i) { return *agreements_[i]; }
  bool alive(size_t i) const { return alive_[i]; }
  size_t size() const { return nodes_.size(); }

 private:
  std::unique_ptr<Membership> make(size_t i, uint64_t seed) {
    auto m = std::make_unique<Membership>(
        cfg_, id(i), addr(i), "127.0.0.1:" + std::to_string(6380 + i),
        net_.attach(addr(i),
                    [this, i](const std::string& from, const std::string& b) {
                      nodes_[i]->receive(from, b, now_);
                    }),
        seed * 1000 + i);
    m->on_change([this](const Member& mm) {
      if (mm.state == MemberState::kDead) ++deaths_seen;
    });
    return m;
  }

  MemoryNetwork net_;
  MembershipConfig cfg_;
  static constexpr int64_t kSettleNs = 1'000'000'000;
  std::vector<std::unique_ptr<Membership>> nodes_;
  std::vector<std::unique_ptr<TableAgreement>> agreements_;
  std::vector<bool> alive_;
  int64_t now_ = 1'000 * kMs;
};

}  // namespace fg
