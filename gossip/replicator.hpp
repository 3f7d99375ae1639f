// Keeps R-1 copies of every slot this node owns on the slot's replicas (SlotTable), and
// keeps the copies other owners send here. Runs on the cluster thread.
//
// Owner side: every `lag` (Δ) the shards hand over the keys requests changed since the
// last round, and each change goes to the live replicas of its slot in one update per
// replica; the peer link keeps updates in order. A replica that is new for some slots, or
// missed an update, first gets a full copy of them (which drops its older copy), then the
// stream continues. `after_replicated` lets a reply wait until every change made since a
// mark has been acknowledged by the replicas (synchronous replication): every round that
// collected changes since the mark, not only the next one — a change made just before a
// round is collected by that round, and whether it arrived is that round's answer.
//
// Replica side: changes are applied only for slots whose owner in this node's table is
// the sender (a fenced ex-owner cannot overwrite), never to slots this node serves. Slots
// copied whole are `complete()`: a failover promotes them with their state.
#pragma once
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "key_slot.hpp"
#include "peer_link.hpp"
#include "shard_pool.hpp"
#include "slot_table.hpp"

namespace fg {

constexpr uint32_t kPeerReplicate = 3;  // ReplicaUpdate -> empty

struct ReplicatorConfig {
  std::string self;
  int64_t lag_ms = 5;  // Δ
  int64_t timeout_ms = 1000;
  size_t chunk_bytes = 4 << 20;
  const Clock* clock = nullptr;  // retries and round times (null: the process's clock)
};

struct ReplicationCounters {
  std::atomic<uint64_t> updates_sent{0};
  std::atomic<uint64_t> keys_sent{0};
  std::atomic<uint64_t> full_copies_sent{0};  // slots copied whole to a replica
  std::atomic<uint64_t> update_failures{0};   // an update or copy a replica did not take
  std::atomic<uint64_t> updates_received{0};
  std::atomic<uint64_t> keys_received{0};
  std::atomic<uint64_t> fenced_updates{0};  // from a node that no longer owns the slots
  std::atomic<uint64_t> sync_waits{0};      // replies that waited for the replicas
  std::atomic<uint64_t> sync_failures{0};   // ... and were not acknowledged in time
  std::atomic<int64_t> last_round_us{0};    // last round: changes collected -> all acked
  // Gauges, refreshed every Δ: copies of slots held here that a replica does not yet hold
  // whole (0: every replica could take over), and slots held here as a whole copy.
  std::atomic<uint64_t> copies_pending{0};
  std::atomic<uint64_t> whole_copies_held{0};
};

class Replicator {
 public:
  using Send = std::function<void(const std::string& node_id, std::string body,
                                  std::chrono::milliseconds deadline, PeerCallback cb)>;
  using Live = std::function<bool(const std::string& node_id)>;

  // `held`: the slots whose state this node holds as owner (SlotKeeper::held); `unserved`:
  // of those, the ones with no state here yet (their grace period: Cluster's lost slots) —
  // never copied to a replica, whose copy may be all that is left of them.
  Replicator(ReplicatorConfig cfg, ShardPool& pool, asio::io_context& io, const SlotBits& held,
             const SlotBits& unserved, Send send, Live live);

  void start();
  // replication-lag changed at runtime (CONFIG SET): the next round waits this long. On
  // the cluster's thread.
  void set_lag_ms(int64_t ms) { cfg_.lag_ms = ms; }
  void stop();
  // A new table was adopted (after the slot keeper acted on it).
  void on_table(const SlotTable& before, const SlotTable& after);
  // This node's state was declared stale: forget every copy and every replica's progress.
  void fence();
  // Take a mark before making changes that must be replicated before they are answered;
  // then after_replicated(mark, done) runs `done(ok)` on the cluster thread once every
  // round that may have collected changes since the mark (from the one collecting at the
  // mark to one more, collecting after this call) is over:
  // ok when each was acknowledged by the live replicas of its slots, false when one was
  // not (a replica did not take it in time, or a round so old it is forgotten). Both
  // callable from any thread.
  uint64_t mark() const { return rounds_started_.load(std::memory_order_acquire); }
  void after_replicated(uint64_t mark, std::function<void(bool ok)> done);
  // A ReplicaUpdate from an owner.
  void on_update(std::string body, PeerServer::Respond respond);

  // Slots held here as a whole copy of their owner's state.
  const SlotBits& complete() const { return complete_; }
  // Spares: copies held here that no table asks this node to keep any more — a replica's
  // copy of slots a new table gave other replicas, the copy a hand-off's sender keeps of the
  // slots it handed over. Until their owner says it holds them and every one of its replicas
  // holds a whole copy (Cluster asks it: release_spares), or for kSpareNs, they are what
  // is left of those slots should the owner die first (Cluster's recovery asks every member).
  // A leaving node keeps them until they are released (keep_spares).
  static constexpr int64_t kSpareNs = 60'000'000'000;
  void add_spares(const SlotBits& slots);
  void release_spares(const SlotBits& slots);
  void keep_spares() { spares_kept_ = true; }
  const SlotBits& spares() const { return spare_; }
  // Every copy held here of slots this node does not serve: kept, or spare.
  SlotBits any_copy() const { return (copies_ | spare_) & ~served(); }
  // Owner side: of the slots held here, those every replica (of this node's table) holds a
  // whole copy of, updated to the last round.
  SlotBits whole_everywhere() const;
  const ReplicationCounters& counters() const { return counters_; }

 private:
  struct Waiter {
    uint64_t since = 0;  // the mark: rounds from this one on count (it may have been collecting)
    uint64_t until = 0;  // ... up to this one
    std::function<void(bool)> done;
  };
  using Waiters = std::vector<Waiter>;
  struct Dest {
    SlotBits replicated;  // slots owned here that this member keeps a copy of
    SlotBits synced;      // ... of which it holds a whole copy plus every update since
    SlotBits copying;     // ... of which a whole copy is on its way
    int64_t retry_at_ms = 0;
  };
  void arm();
  void round();
  void ship(std::vector<ShardChanges>& parts, uint64_t seq, int64_t started_us);
  void round_over(uint64_t seq, bool ok);
  void answer_waiters();
  void copy_whole(const std::string& id, SlotBits slots);
  void lost(const std::string& id);
  bool accepts(const std::string& from, uint64_t epoch, uint32_t slot) const;
  int64_t now_us() const;
  int64_t now_ms() const { return now_us() / 1000; }

  ReplicatorConfig cfg_;
  ShardPool& pool_;
  asio::io_context& io_;
  const SlotBits& held_;
  const SlotBits& unserved_;
  SlotBits served() const { return held_ & ~unserved_; }
  // Whether a replica may lack a whole copy it lacked not at the last look (arm()).
  bool whole_dirty_ = true;
  SlotBits held_seen_;  // held_ at the last look (what it found lacking: copies_pending)
  Send send_;
  Live live_;
  SteadyTimer timer_;
  SlotTable table_;
  int self_index_ = -1;
  std::map<std::string, Dest> dests_;
  SlotBits complete_;  // replica side
  SlotBits copies_;    // replica side: slots whose copy may be held here
  SlotBits spare_;     // spares (above), and when each batch of them goes
  struct SpareBatch {
    SlotBits slots;
    int64_t until_ns;
  };
  std::vector<SpareBatch> spare_batches_;
  bool spares_kept_ = false;
  void expire_spares();
  bool collecting_ = false;
  bool again_ = false;
  Waiters next_waiters_;  // wait for the next round that collects changes
  Waiters waiting_;       // their rounds are collected: wait for them to end
  std::atomic<uint64_t> rounds_started_{0};
  // Recent rounds, from seq first_round_ on, each (over, acknowledged); older ones count as
  // not acknowledged. (Seqs are consecutive: a queue, not a tree looked up every round.)
  std::deque<std::pair<bool, bool>> rounds_;
  uint64_t first_round_ = 1;
  std::pair<bool, bool>* round_at(uint64_t seq) {
    return seq >= first_round_ && seq - first_round_ < rounds_.size() ? &rounds_[seq - first_round_]
                                                                      : nullptr;
  }
  std::vector<ShardChanges> parts_;  // the shards' changes: buffers kept between rounds
  ReplicationCounters counters_;
  bool stopped_ = false;
  bool complete_changed_ = false;  // since whole_copies_held was counted
};

}  // namespace fg
