// A node's place in the cluster, run on one thread of its own: gossip membership (UDP),
// slot-table agreement, peer links (TCP, same port number), and slot hand-off between
// this node's shards and its peers. Publishes the routing snapshot request paths read.
#pragma once
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "book_sync.hpp"
#include "membership.hpp"
#include "peer_link.hpp"
#include "replicator.hpp"
#include "routing.hpp"
#include "shard_pool.hpp"
#include "slot_keeper.hpp"
#include "table_agreement.hpp"
#include "udp_transport.hpp"
#include "wake_guard.hpp"

namespace fg {
namespace wire {
class SlotHandoff;
}

// Peer request kinds (peer.proto PeerRequest.kind).
constexpr uint32_t kPeerForward = 1;  // ForwardRequest -> ForwardResponse
constexpr uint32_t kPeerHandoff = 2;  // SlotHandoff -> empty
// A StateChunk of keys for the receiver to merge into the slots it serves -> a StateChunk
// of those it does not serve (their owner is elsewhere, or their state not yet here).
constexpr uint32_t kPeerMerge = 5;
// The same, for a snapshot older than the copies the cluster kept: merged only into slots
// the receiver started from nothing lately, dropped elsewhere.
constexpr uint32_t kPeerMergeIntoFresh = 6;
// A message published on the sender (api/core/pubsub.hpp's encoding) for the receiver's
// subscribers -> empty.
constexpr uint32_t kPeerPublish = 7;
// A CopyBack (state.proto) asking a replica for its copy of slots the asker owns -> a CopyBack
// naming those it will send, as a hand-off (copy_back.cpp).
constexpr uint32_t kPeerCopyBack = 8;
// What the node serves and has served lately, for an operator's view of the whole cluster
// (node/history.hpp): a request naming what to include -> the node's report (JSON).
constexpr uint32_t kPeerReport = 9;
// A CopyBack naming slots -> a CopyBack naming those the receiver holds, and of them those
// its replicas all hold whole (copy_back.cpp): may the asker drop its spare copies of them?
constexpr uint32_t kPeerHolds = 10;

// A graceful leave's progress (Cluster::leave_progress).
struct LeaveProgress {
  bool leaving = false;
  bool done = false;  // every slot's state is held elsewhere, by as many copies as before
  // Slots whose only reachable copy is here: still held, on their way out, or a copy their
  // owner does not hold (it died before it got them; the next table's owner will ask).
  size_t last_copy = 0;
  size_t fewer_copies = 0;   // held by their owner, not yet whole on all of its replicas
  bool nobody_left = false;  // no other member alive: every one is leaving, left or dead
  int64_t waited_ms = 0;
};

struct ClusterConfig {
  std::string node_id;
  std::string bind_host = "127.0.0.1";  // cluster bus: UDP gossip and TCP peer links
  int port = 16380;
  std::string announce_host;  // how peers and clients reach this node; default bind_host
  int resp_port = 6380;
  int native_port = 0;             // 0: no native listener
  std::vector<std::string> seeds;  // cluster bus addresses, host:port
  MembershipConfig membership;
  int64_t settle_ms = 1000;         // live set stable this long before a new table
  int64_t await_timeout_ms = 3000;  // wait this long for a moving slot's state
  // A slot this node gains with no reachable copy of its state answers its policy's fail
  // mode this long before it is served from empty (0: at once).
  int64_t empty_grace_ms = 10000;
  int64_t handoff_timeout_ms = 10000;
  size_t handoff_chunk_bytes = 4 << 20;
  size_t replicas = 2;             // copies of each slot's state, owner included (R)
  int64_t replication_lag_ms = 5;  // Δ
  int64_t sync_timeout_ms = 1000;  // a replica's acknowledgement, at most
  BusKey* bus_key = nullptr;       // the cluster secret on gossip (null or empty: none)
  TlsContexts* tls = nullptr;      // peer links over mutual TLS (null: plain TCP)
  // Time for membership, the tables, hand-offs, graces and replication (null: the
  // process's clock), and the seed of this node's random choices (0: one from the OS).
  const Clock* clock = nullptr;
  uint64_t seed = 0;
  // The network peer requests travel (null: TCP from bind_host, with bus_key and tls),
  // and the one gossip datagrams travel (null: UDP).
  PeerNet* peer_net = nullptr;
  DatagramNet* datagrams = nullptr;
  // No thread of its own: whoever owns the cluster runs io() (the simulator polls it).
  bool polled = false;
};

struct ClusterCounters {
  std::atomic<uint64_t> handoffs_sent{0};      // slot hand-offs completed, as sender
  std::atomic<uint64_t> handoffs_received{0};  // hand-off chunks installed
  std::atomic<uint64_t> keys_sent{0};
  std::atomic<uint64_t> keys_received{0};
  std::atomic<uint64_t> slots_started_empty{0};  // (a first table's slots not counted)
  std::atomic<uint64_t> slots_given_grace{0};    // slots held back for cluster-empty-grace
  std::atomic<uint64_t> slots_promoted{0};       // served from a replica's copy after a failure
  std::atomic<uint64_t> table_changes{0};
  std::atomic<uint64_t> fenced{0};           // times this node found its state stale and dropped it
  std::atomic<uint64_t> keys_merged{0};      // copies from elsewhere merged into served keys
  std::atomic<uint64_t> keys_fenced{0};      // keys this node held when fenced, sent to owners
  std::atomic<uint64_t> restore_pending{0};  // restored keys not yet at their owner
  std::atomic<uint64_t> restore_dropped{0};  // restored keys given up on (no owner took them)
  std::atomic<uint64_t> restore_superseded{0};  // 1 when the cluster's copies were newer
  // Times this node stopped serving for want of the cluster (out of touch with most of it,
  // or back from not running), and members it saw declared dead or suspected.
  std::atomic<uint64_t> not_serving{0};
  std::atomic<uint64_t> members_dead{0};
  std::atomic<uint64_t> members_suspected{0};
};

class Cluster {
 public:
  Cluster(ClusterConfig cfg, ShardPool& pool);
  ~Cluster();

  // Handler for peer requests of `kind` (other than HANDOFF); runs on the cluster thread.
  // Register before start().
  void on_request(uint32_t kind, PeerServer::Handler h) { handlers_[kind] = std::move(h); }
  // The settings book this node keeps equal to every other member's (before start; it
  // must outlive the cluster).
  void share_book(Book* book) { book_ = book; }
  uint64_t book_exchanges() const { return book_exchanges_.load(std::memory_order_relaxed); }
  // State loaded from disk at start (before start()): once this node is in a table, each
  // key goes to its slot's owner — here or elsewhere — and is merged there (actors/merge.hpp),
  // retried until an owner takes it, for at most `give_up_ms` after the first table.
  // `saved_epoch`: the table epoch the snapshot was saved under. A first table with a higher
  // epoch is the same cluster gone on meanwhile — its copies are newer than the snapshot,
  // which then goes only into slots that lost every copy (started from nothing lately); one
  // no higher is a cluster started afresh, which takes all of it.
  void restore(std::vector<EntrySnapshot> entries, uint64_t saved_epoch,
               int64_t give_up_ms = 60'000);
  // Binds the cluster port (throws std::system_error), joins the seeds, starts the thread.
  void start();
  // Graceful exit: hands this node's slots to the remaining members, tells everyone it is
  // leaving, and waits (at most `max_wait`) for the hand-offs to be acknowledged.
  // Returns false if some state could not be handed off in time.
  bool leave(std::chrono::milliseconds max_wait);
  // The same in two steps, for an owner that runs io() itself: start_leave() once, then
  // left() until it says the hand-offs are settled (`clean`: every one acknowledged).
  //
  // A leave never lowers the number of copies: the node stays until every slot whose state
  // it holds (its own, handed over; a replica's copy) is held by its owner and whole on that
  // owner's replicas. A receiver that stops answering is waited for (its slots come back
  // here) until a table without it gives them to someone else; after kLeaveWaitNs, the node
  // may go if what it holds is held elsewhere (fewer copies for a while), but never while it
  // holds the last reachable copy of a slot (left() stays false: the owner forces it).
  static constexpr int64_t kLeaveWaitNs = 30'000'000'000;
  void start_leave();
  bool left(bool& clean) const;
  LeaveProgress leave_progress() const;  // (cluster thread)
  // Any thread: the last progress the cluster thread saw while leaving (for /readyz).
  std::string leave_status() const {
    std::lock_guard<std::mutex> lock(leave_mu_);
    return leave_status_;
  }
  // Any thread: slots whose only reachable copy is here, while leaving (0: none, or not
  // leaving).
  size_t leave_last_copies() const { return last_copies_.load(std::memory_order_relaxed); }
  void stop();

  RoutingHub& routing() { return hub_; }
  asio::io_context& io() { return io_; }
  const ClusterConfig& config() const { return cfg_; }
  // replication-lag changed at runtime (CONFIG SET), from any thread: the replicator's
  // rounds take it from the next one on.
  void set_replication_lag(int64_t ms) {
    lag_ms_.store(ms, std::memory_order_relaxed);
    asio::post(io_, [this, ms] { replicator_->set_lag_ms(ms); });
  }
  int64_t replication_lag_ms() const { return lag_ms_.load(std::memory_order_relaxed); }
  const ClusterCounters& counters() const { return counters_; }
  const ReplicationCounters& replication() const { return replicator_->counters(); }
  // A mark taken before the shards make changes; after_replicated runs `done(ok)` (on the
  // cluster thread) once every change made since is held by its slot's live replicas
  // (Replicator::after_replicated). Any thread.
  uint64_t replication_mark() const { return replicator_->mark(); }
  void after_replicated(uint64_t mark, std::function<void(bool ok)> done) {
    replicator_->after_replicated(mark, std::move(done));
  }
  // A peer call from any thread; `cb` runs on the cluster thread.
  void call(const std::string& peer_addr, uint32_t kind, std::string body,
            std::chrono::milliseconds deadline, PeerCallback cb);
  // Only on the cluster thread (handlers, callbacks).
  PeerLink& peer(const std::string& peer_addr);

 private:
  // A hand-off on its way out.
  struct Outgoing {
    std::string to;  // node id
    SlotBits slots;
    SlotBits fresh;  // of slots, started here from nothing lately (SlotHandoff.fresh)
    uint64_t epoch = 0;
    uint64_t id = 0;
    std::vector<EntrySnapshot> entries;
    std::vector<std::string> chunks;
    size_t next = 0;
    bool copy = false;  // a replica's copy going back to its owner: never taken back
    SteadyTimer retry;
    explicit Outgoing(asio::io_context& io) : retry(io) {}
  };
  void tick();
  void arm();
  void on_table(const SlotTable& before, const SlotTable& after);
  void apply(const SlotKeeper::Actions& a);
  // `copy`: a replica's copy going back to its owner, which asked for it (copy_back.cpp):
  // the replica keeps it.
  void hand_off(const std::string& to, const SlotBits& slots, bool copy = false);
  void send_handoff(std::shared_ptr<Outgoing> o);
  void send_chunk(std::shared_ptr<Outgoing> o);
  // `removed`: the table in force no longer lists the receiver (it already says where the
  // slots go); else they wait for the next table.
  void reclaim(std::shared_ptr<Outgoing> o, bool removed = false);
  // Hands reclaimed slots again to members that turn out reachable under the same table
  // (their death was this node's view only: no newer table will come to move them).
  void hand_again();
  void on_handoff(std::string body, PeerServer::Respond respond);  // handoff_in.cpp
  void gather_copy(const wire::SlotHandoff& h, const SlotBits& slots,
                   std::vector<EntrySnapshot> entries, PeerServer::Respond respond);
  // A process's first table gives it slots: their replicas are asked, in replica order, for
  // the copies they hold (copy_back.cpp) — the previous process may have owned them until a
  // moment ago, restarted before the cluster noticed, and only the replicas hold what it
  // admitted since its last save.
  void ask_copies();
  void on_copy_back(std::string body, PeerServer::Respond respond);
  // Slots given to this node with no copy of their state here (their grace period runs):
  // every member is asked whether it holds one — a whole copy preferred, then this node's
  // own partial one, then any (copy_back.cpp).
  void recover(const SlotBits& slots);
  void recovery_round();
  void recovery_chosen();
  void serve_own_copy(const SlotBits& slots);
  // Spare copies (Replicator): their owners are asked whether they hold them whole yet.
  void check_spares(int64_t now);
  void on_holds(std::string body, PeerServer::Respond respond);
  void note_leave(int64_t now);
  bool can_send(const std::string& id) const;
  void publish();
  void dispatch(uint32_t kind, std::string body, PeerServer::Respond respond);
  bool live(const std::string& id) const;
  void fence(const SlotTable& after);  // fencing.cpp
  // Slots whose grace ends now (no longer lost): of `slots`, those that were in it.
  SlotBits out_of_grace(const SlotBits& slots);
  // Starts serving `slots` of lost_ now, from whatever arrives for them (or nothing).
  void end_grace(const SlotBits& slots, const char* why);
  void grace_tick(int64_t now_ns);
  void push_restored(int64_t now_ns);  // cluster_restore.cpp
  void on_merge(std::string body, PeerServer::Respond respond, bool fresh_only);
  void restored_back(std::vector<EntrySnapshot> entries);  // refused or failed: again later
  void start_book_sync();
  std::vector<std::string> live_addrs() const;

  int64_t now_ns() const { return clock_->now_ns(); }

  ClusterConfig cfg_;
  const Clock* clock_;
  std::mt19937_64 random_;
  ShardPool& pool_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  SteadyTimer timer_;
  std::unique_ptr<DatagramPort> transport_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<TableAgreement> agreement_;
  std::unique_ptr<PeerNet> tcp_;      // (when no peer_net is given)
  std::unique_ptr<DatagramNet> udp_;  // (when no datagrams net is given)
  PeerNet* net_;
  DatagramNet* datagrams_;
  std::unique_ptr<PeerListener> server_;
  SlotKeeper keeper_;
  std::unique_ptr<Replicator> replicator_;
  std::atomic<int64_t> lag_ms_{0};  // replication-lag in force (Δ), for any thread
  std::map<std::string, std::shared_ptr<PeerLink>> peers_;
  std::map<uint32_t, PeerServer::Handler> handlers_;
  std::map<std::string, Member> known_;  // every member ever heard of, by id
  std::vector<std::shared_ptr<Outgoing>> outgoing_;
  std::map<std::pair<std::string, uint64_t>, uint32_t> installed_;  // hand-off -> chunks done
  // Hand-off ids start at random: a node restarted under the same id must not reuse its
  // previous process's ids, or a receiver takes a new hand-off for a resend of an old one
  // (acknowledged, never installed: the slots' state lost).
  uint64_t next_handoff_ = 1;
  int extracting_ = 0;  // extractions whose state has not come back from the shards yet
  // Slots ours with no copy reachable, held back until their grace ends (cluster thread).
  struct Grace {
    SlotBits slots;
    int64_t until_ns = 0;
  };
  std::vector<Grace> grace_;
  SlotBits lost_;
  bool behind_ = false;  // a newer table than ours is known to exist (TableAgreement::behind)
  // This node lost the quorum of its table's members (it was cut off): it serves again only
  // once a quorum of them has told it themselves that they hold the same table — a rumour
  // that a member is alive again does not say the cluster has not gone on without us.
  bool confirming_ = false;
  uint64_t confirm_heard_ = ~uint64_t{0};  // membership's heard_version() last looked at
  // Confirming: members not heard at the table's epoch are pinged at once, then this often.
  static constexpr int64_t kConfirmAskNs = 1'000'000'000;
  int64_t confirm_asked_ns_ = 0;
  void ask_unconfirmed(int64_t now);
  bool isolated(int64_t now) const;  // heard no other node lately (isolated_after_ns)
  std::vector<std::string> quorum_view();
  std::vector<std::string> seen_alive(const SlotTable& t) const;  // (for the quorum)
  // Slots taken back from an unreachable receiver, by receiver, and the table then.
  std::map<std::string, SlotBits> reclaimed_;
  uint64_t reclaimed_epoch_ = 0;
  // When this node last started serving each slot from nothing (0: never, or not lately):
  // copies that come back within a minute of it bring their leases too (Shard::merge).
  std::vector<int64_t> empty_at_ns_ = std::vector<int64_t>(kSlotCount, 0);
  void started_empty(const SlotBits& slots, int64_t now_ns);
  SlotBits fresh_slots(int64_t now_ns) const;
  // The first table's slots still being asked for, the replica rank asked next, the answers
  // awaited, and the table they were asked under (cluster thread).
  SlotBits asking_;
  size_t ask_rank_ = 1;
  int asks_out_ = 0;
  uint64_t ask_epoch_ = 0;
  bool copies_came_back_ = false;  // a replica had a copy: the cluster ran meanwhile
  // Keys loaded from disk on their way to their owners (cluster thread; cluster_restore.cpp).
  std::vector<EntrySnapshot> restored_;
  int restore_in_flight_ = 0;
  int64_t restore_next_ns_ = 0;
  int64_t restore_give_up_ms_ = 60'000;
  int64_t restore_deadline_ns_ = 0;  // set at the first table
  bool restoring_ = false;
  uint64_t restore_epoch_ = 0;  // the snapshot's table epoch (disk restores)
  bool restore_from_disk_ = false;
  bool restore_fresh_only_ = false;  // decided at the first table (restore())
  bool leaving_ = false;
  bool lost_on_leave_ = false;  // a hand-off failed while leaving (its state came back here)
  int64_t leave_started_ns_ = 0;
  std::chrono::steady_clock::time_point leave_started_steady_;
  bool leave_alone_ = false;
  std::atomic<size_t> last_copies_{0};
  int64_t leave_logged_ns_ = 0;
  int64_t leave_asked_ns_ = 0;
  size_t leave_ask_next_ = 0;
  mutable std::mutex leave_mu_;
  std::string leave_status_;  // (under leave_mu_)
  // Spares' owners asked (check_spares): answers awaited, when last asked, and the spares
  // whose owner said it holds them (not necessarily whole on its replicas yet).
  int holds_out_ = 0;
  int64_t holds_asked_ns_ = 0;
  SlotBits held_elsewhere_;
  // Recovery: slots found lacking since the round under way began, the round's slots, its
  // probes awaited, and what each member said it holds.
  SlotBits recover_want_;
  SlotBits recovering_;
  int recover_out_ = 0;
  struct Offer {
    SlotBits any, whole, sending;
  };
  // Slots some member holds the owner's state of (CopyBack.sending): asked again until it
  // arrives by hand-off, for at most kSendingWaitNs from the first such answer; then what
  // the copies hold is served as for any slot without a whole copy.
  static constexpr int64_t kSendingWaitNs = 3'000'000'000;
  SlotBits recover_retry_;
  int64_t recover_retry_at_ns_ = 0;
  int64_t sending_since_ns_ = 0;
  SlotBits state_here() const;  // slots whose owner's state is here (held, or on its way out)
  std::map<std::string, Offer> offers_;
  // Slots with no whole copy anywhere, whose every holder's copy is being merged into this
  // node's before it serves them; the holders whose copies are still awaited, and until when.
  SlotBits merging_;
  std::map<std::string, SlotBits> fetching_;
  int64_t gather_until_ns_ = 0;
  void gathered();  // (every copy in, or the wait over: serve what was gathered)
  // Copies on their way in (SlotHandoff.copy), by hand-off: the slots they may fill.
  std::map<std::pair<std::string, uint64_t>, SlotBits> copy_into_;
  bool dirty_ = false;
  WakeGuard wake_;
  std::pair<uint64_t, uint64_t> quorum_checked_{~uint64_t{0}, 0};  // (membership version, epoch)
  uint64_t wake_seq_ = ~uint64_t{0};  // acks to pings from this sequence number on count
  bool standing_down_ = false;
  std::shared_ptr<std::atomic<int64_t>> pulse_ns_;  // shared with every Routing published
  Book* book_ = nullptr;
  int book_listener_ = 0;
  std::unique_ptr<BookSync> book_sync_;
  std::atomic<uint64_t> book_exchanges_{0};
  RoutingHub hub_;
  ClusterCounters counters_;
  std::thread thread_;
  bool stopped_ = false;  // (polled)
};

}  // namespace fg
