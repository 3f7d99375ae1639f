// The simulated world: N real `Node`s in one process, on virtual time and the in-memory
// networks, all run by one thread — every event loop polled, the shard actors on CAF's
// deterministic test scheduler — so one seed always gives the same run.
#pragma once
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "datagram_net.hpp"
#include "memory_stream.hpp"
#include "node.hpp"
#include "peer_net.hpp"

namespace fg::sim {

// A node's wall clock in the simulator: virtual time plus the node's offset, which follows
// a stepped wall clock by slewing (kMaxSlewPpm), as SystemClock does in a process.
class SimClock final : public Clock {
 public:
  explicit SimClock(int64_t epoch_ns) : epoch_(epoch_ns) {}
  int64_t now_ns() const override;
  void shift(int64_t delta_ns) const override { offset_ += delta_ns; }
  void step(int64_t d_ns) { target_ += d_ns; }  // the machine's wall clock jumps
  void restart();  // a process started again takes the wall clock at once

 private:
  int64_t epoch_;
  mutable int64_t offset_ = 0;
  int64_t target_ = 0;
  mutable int64_t aimed_at_ = 0;
};

struct SimNode {
  int index = 0;
  std::string id;
  int port = 0;  // RESP (a name: nothing listens)
  int bus = 0;
  std::unique_ptr<SimClock> clock;  // (kept across restarts: old actors may read it)
  std::unique_ptr<Node> node;
  bool paused = false;  // its event loops are not run (SIGSTOP)
  int starts = 0;
  std::string bus_addr() const { return "127.0.0.1:" + std::to_string(bus); }
  bool up() const { return node != nullptr; }
  std::vector<std::weak_ptr<MemoryClient::Pipe>> clients;  // its in-memory connections
};

class World {
 public:
  // `disk`: each node saves its state every 3 s to a directory of its own (in /dev/shm
  // where there is one), read back when it starts again; removed with the world.
  World(uint64_t seed, int nodes, bool disk = false);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int64_t now() const;  // virtual ns since the world began
  // The nodes' wall clock (ns since the Unix epoch) at world time `t`, while not stepped.
  int64_t wall_at(int64_t t) const;
  std::mt19937_64& rng() { return rng_; }
  size_t size() const { return nodes_.size(); }
  SimNode& node(size_t i) { return *nodes_[i]; }
  // One more (not started), named `id` (default: n<its index>): a name chosen to sort right
  // after another's puts the new node next to it on the table's ring.
  int add_node(const std::string& id = "");
  void start(size_t i);
  void crash(size_t i);      // kill -9
  void wipe_disk(size_t i);  // its saved state gone (a machine replaced)
  // Its directory refuses every write (a full or read-only disk: a file stands where the
  // directory was, so creating the save's temporary file fails), and back again.
  void break_disk(size_t i);
  void mend_disk(size_t i);
  MemoryPeerHub& peers() { return peers_; }
  MemoryDatagramHub& datagrams() { return datagrams_; }

  // Runs the world to virtual time `t` (ns since it began): every event due, every timer,
  // every message, in one order fixed by the seed.
  void run_until(int64_t t);
  void at(int64_t t, std::function<void()> f);
  // Runs everything ready now until nothing is (bounded); how many handlers ran.
  size_t settle();
  // Changes every node's settings from the simulator's defaults (before the nodes start).
  void set_config(std::function<void(NodeConfig&)> change) { change_config_ = std::move(change); }
  // A client connection to node `i` (up), over `client`'s in-memory pipe.
  void connect(size_t i, MemoryClient& client, bool native = false);
  // Log lines say which node and when (virtual ms): for reading one seed's run.
  void set_verbose(bool v) { verbose_ = v; }

  // The up node's view: the index of the node that owns `key`'s slot (-1: none known).
  int owner_of(const std::string& key) const;
  // Every up, unpaused node has the same table, of exactly the up nodes, with quorum and
  // nothing awaited.
  bool formed() const;
  int index_of(const std::string& id) const;
  // How node `by` (up) sees member `id` in its routing snapshot; none if it does not list it.
  std::optional<MemberState> state_seen(size_t by, const std::string& id) const;

 private:
  struct Event {
    int64_t t;
    uint64_t seq;
    std::function<void()> f;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void advance_to(int64_t t);
  size_t run_actors();  // every actor job that can run now (not a paused node's)
  NodeConfig config_for(const SimNode& n) const;

  uint64_t seed_;
  std::string disk_;  // the nodes' directories are under it; empty: no disk
  std::mt19937_64 rng_;
  int64_t start_ns_;
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  MemoryPeerHub peers_;
  MemoryDatagramHub datagrams_;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t event_seq_ = 0;
  bool verbose_ = false;
  std::function<void(NodeConfig&)> change_config_;
};

}  // namespace fg::sim
