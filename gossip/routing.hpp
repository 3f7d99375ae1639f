// The cluster as request routing sees it: who owns each slot, where clients and peers
// reach each node, and which slots this node serves right now. Published by the cluster
// thread as an immutable snapshot; I/O threads re-read it only when its version changes.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clock.hpp"
#include "key_slot.hpp"
#include "member.hpp"
#include "slot_table.hpp"
#include "wake_guard.hpp"

namespace fg {

struct RouteNode {
  std::string id;
  std::string resp_host;
  int resp_port = 0;
  int native_port = 0;    // on resp_host; 0 = no native listener
  std::string peer_addr;  // cluster bus host:port (UDP gossip, TCP peer links)
  MemberState state = MemberState::kAlive;
  bool self = false;
  bool in_table = false;  // owns slots in the current table
};

struct Routing {
  uint64_t epoch = 0;            // of the slot table; 0 = none adopted yet
  std::vector<RouteNode> nodes;  // table members first (index = owner index), then others
  int self_index = -1;           // in nodes
  std::vector<uint16_t> owner = std::vector<uint16_t>(kSlotCount, kNoOwner);
  SlotBits serving;   // slots whose state this node holds and serves
  SlotBits awaiting;  // ours in the table, state still on its way here
  // Ours in the table, but no copy of the state reachable: the grace period before they are
  // served from empty (cluster-empty-grace); requests get their policy's fail mode.
  SlotBits lost;
  std::vector<SlotRange> ranges;  // of the table, in slot order
  bool quorum = true;             // this node sees enough of the table's members to serve
  size_t replicas = 2;            // copies the table keeps of each slot (owner included)
  // The cluster thread's last tick while not standing down (see wake_guard.hpp), on the
  // node's clock. An I/O thread that finds it older than kStallNs has woken from a stall
  // before the cluster thread did, or the node stands down: either way, do not serve.
  std::shared_ptr<const std::atomic<int64_t>> pulse_ns;
  const RouteNode& self() const { return nodes[self_index]; }
  // `now_ns` on the node's clock (the one the cluster thread stamps the pulse with).
  bool can_serve(int64_t now_ns) const {
    return quorum && (!pulse_ns || now_ns - pulse_ns->load(std::memory_order_acquire) < kStallNs);
  }
};

class RoutingHub {
 public:
  RoutingHub() : current_(std::make_shared<const Routing>()), version_(next_base()) {}
  // A snapshot's version, unique in the process: readers that keep the snapshot they last
  // read (per thread) compare versions alone, and nodes in one process (the simulator, on
  // one thread) must never take each other's for their own. With versions counted from 1
  // in every hub, a publishing thread took another node's snapshot, where it is not itself,
  // and sent its own subscribers each message a second time (`floodgate-sim --load doors`).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::shared_ptr<const Routing> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }
  void publish(std::shared_ptr<const Routing> r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_ = std::move(r);
    }
    version_.fetch_add(1, std::memory_order_acq_rel);
  }

 private:
  static uint64_t next_base() {  // (2^32 publishes per hub before two could meet)
    static std::atomic<uint64_t> hubs{0};
    return (hubs.fetch_add(1, std::memory_order_relaxed) << 32) + 1;
  }
  mutable std::mutex mu_;
  std::shared_ptr<const Routing> current_;
  std::atomic<uint64_t> version_;
};

}  // namespace fg
