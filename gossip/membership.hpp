// SWIM-style membership as a state machine: time comes in through tick()/receive(),
// messages go out through a Transport. Direct probes, indirect probes through k others,
// suspicion refuted by incarnation numbers, dissemination piggybacked on every message,
// push-pull sync to join and to heal, graceful leave.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clock_sync.hpp"
#include "member.hpp"
#include "transport.hpp"

namespace fg {

namespace wire {
class Envelope;
}

struct MembershipConfig {
  int64_t probe_interval_ns = 200'000'000;  // one member probed per interval
  int64_t probe_timeout_ns = 80'000'000;    // direct ack deadline, then ask others
  int indirect_checks = 3;                  // members asked to probe for us
  // Suspect -> dead unless refuted within a timeout that starts at max and falls toward
  // min as independent accusers confirm it (Lifeguard): a lone, perhaps isolated,
  // accuser waits long; a member everyone fails to reach dies fast.
  int64_t suspicion_min_ns = 1'000'000'000;
  int64_t suspicion_max_ns = 4'000'000'000;
  // A node that heard no other node this long stops serving (Cluster: it counts as out of
  // touch with most of a table of 3 or more). A node that hears nobody — its inbound cut —
  // sees the others fall one probe at a time, while they declare it dead at once, after
  // suspicion_min: it must stop before that. (At rest a node hears ~10 messages a second.)
  int64_t isolated_after_ns = 750'000'000;
  int suspicion_confirmations = 3;           // accusers beyond the first that reach min
  int64_t gossip_interval_ns = 100'000'000;  // pending updates go to a few members
  int gossip_fanout = 3;
  int retransmit_mult = 6;                   // each update rides ~mult*log10(n+1) messages
  size_t max_piggyback = 8;                  // updates per message
  int64_t sync_interval_ns = 5'000'000'000;  // push-pull with one random member
  // While more updates wait to ride messages than gossip carries in a sync interval (a
  // cluster of hundreds started at once: each node has hundreds of joins to spread), whole
  // views spread them faster: push-pull this often instead, as long as the view keeps
  // changing between push-pulls (the backlog itself outlives the news by a minute).
  int64_t backlog_sync_interval_ns = 1'000'000'000;
  int64_t reap_after_ns = 60'000'000'000;  // forget dead/left members after this
  int64_t seed_retry_ns = 500'000'000;     // a node that knows no live member asks the seeds
  // Believe messages that do not name their receiver, as the previous version sends them
  // (cluster-bus-legacy, for a rolling upgrade); otherwise only a join's SYNC_REQ may not.
  bool accept_unaddressed = false;
  ClockSyncConfig time;  // how a starting node takes the cluster's time
};

class Membership {
 public:
  using ChangeFn = std::function<void(const Member&)>;

  Membership(MembershipConfig cfg, std::string id, std::string addr, std::string resp_addr,
             Transport& transport, uint64_t seed);
  // The native-protocol port clients are told about (before start).
  void set_native_port(int port) { self_.native_port = port; }

  // Announces this node to the seeds (gossip addresses) and asks for their view.
  void join(const std::vector<std::string>& seed_addrs, int64_t now_ns);
  // From now until it has taken the cluster's time, this node takes no table and no
  // settings from messages (clock_sync.hpp); with no seed but itself, its time is the
  // cluster's at once. Called by join(); before it, for messages that come first.
  void begin_time(const std::vector<std::string>& seed_addrs, int64_t now_ns);
  // Tells the cluster this node is leaving on purpose (others mark it left, not dead).
  void leave(int64_t now_ns);
  void tick(int64_t now_ns);
  // A push-pull with the member at `addr` now (each side sends its whole view): a table
  // that lists members this node has not heard of yet came from it.
  void sync_with(const std::string& addr);
  void receive(const std::string& from_addr, std::string_view bytes, int64_t now_ns);

  // Called for every state change of any member (not self), after it is applied.
  void on_change(ChangeFn fn) { on_change_ = std::move(fn); }

  // Stamped on every message this node sends (the table agreement's advertisement).
  void set_advert(uint64_t epoch, std::string planner) {
    advert_epoch_ = epoch;
    advert_planner_ = std::move(planner);
  }
  // Told of every message received: its sender's advertisement, and the raw bytes of any
  // message kind membership itself does not handle.
  using AdvertFn =
      std::function<void(const std::string& from_addr, uint64_t epoch, const std::string& planner)>;
  using OtherFn =
      std::function<void(const std::string& from_addr, int kind, std::string_view bytes)>;
  void on_advert(AdvertFn fn) { on_advert_ = std::move(fn); }
  // Every ACK received, with its sender's id, advertised table epoch and the sequence
  // number it answers (an answer to a ping sent at or after ping_all's first one is
  // fresh: it cannot have waited in a socket buffer while this process was stopped).
  using HeardFn = std::function<void(const std::string& from_id, uint64_t epoch, uint64_t seq)>;
  void on_heard(HeardFn fn) { on_heard_ = std::move(fn); }
  // Pings every live member now; returns the first sequence number used.
  uint64_t ping_all();
  // Pings the live members not heard advertising table `epoch` since forget_heard() (their
  // answers say it, or not): how many.
  size_t ping_unheard(uint64_t epoch);
  // The settings book's digest, stamped on every message; told of every different one heard.
  void set_book_digest(uint64_t digest) { book_digest_ = digest; }
  using BookAdvertFn = std::function<void(const std::string& from_addr, uint64_t digest)>;
  void on_book_advert(BookAdvertFn fn) { on_book_advert_ = std::move(fn); }
  void on_other(OtherFn fn) { on_other_ = std::move(fn); }
  // A message addressed to another node (recorded on its way there and sent here) was
  // dropped.
  void on_misaddressed(std::function<void()> fn) { on_misaddressed_ = std::move(fn); }
  // This node settled its time (clock_sync.hpp) by moving its clock `delta_ns` (0: it kept
  // its own). Told once, before any later message is handled; the times membership keeps
  // have moved with the clock already, and the handler must move the clock itself.
  void on_time_settled(std::function<void(int64_t delta_ns)> fn) { on_time_ = std::move(fn); }
  // Whether this node's time is the cluster's yet (a node with no seed but itself: at once).
  bool time_settled() const { return time_.settled(); }
  Transport& transport() { return transport_; }

  const Member& self() const { return self_; }
  const std::map<std::string, Member>& others() const { return members_; }
  std::vector<std::string> live_ids() const;   // self included, sorted
  std::vector<std::string> alive_ids() const;  // the same without suspects
  // Counts every change of who is a member and in what state (self included): what is
  // computed from the member list each tick is computed again only when it moved (at
  // 1,000 members, building and comparing those lists every 10 ms was most of a node's
  // upkeep).
  uint64_t version() const { return version_; }
  // The table epoch member `id` advertised in the last message it sent us itself (not a
  // rumour about it); 0 when none since forget_heard().
  uint64_t heard_epoch(const std::string& id) const {
    auto it = heard_epoch_.find(id);
    return it == heard_epoch_.end() ? 0 : it->second;
  }
  void forget_heard() {
    heard_epoch_.clear();
    ++heard_version_;
  }
  // Counts changes of what heard_epoch() answers.
  uint64_t heard_version() const { return heard_version_; }
  // When a message of any other node last arrived (the join, before any).
  int64_t last_heard_ns() const { return last_heard_ns_; }
  const MembershipConfig& config() const { return cfg_; }

 private:
  bool addressed_here(const wire::Envelope& env) const;
  struct Probe {
    std::string target;
    uint64_t seq = 0;
    int64_t sent_ns = 0;
    bool acked = false;
    bool indirect_sent = false;
  };
  struct Relay {
    std::string origin_addr;
    uint64_t origin_seq;
    int64_t expires_ns;
  };

  void start_probe(int64_t now);
  // `echo_ns`: an answer's copy of the clock the message it answers was sent at.
  void send(int kind, const std::string& to_addr, uint64_t seq, const std::string& target,
            const std::string& target_addr, bool full_view, int64_t echo_ns = 0);
  // Settles this node's time when the samples say so; returns the clock's move (0: none).
  int64_t settle_time(int64_t now);
  void rebase(int64_t delta_ns);  // every time kept, moved with the clock
  void apply(const Member& u, int64_t now);
  void refute(uint64_t heard_incarnation);
  void set_state(Member& m, MemberState s, uint64_t inc, int64_t now);
  void suspect(Member& m, uint64_t inc, const std::string& accuser, int64_t now);
  int64_t suspicion_timeout(const Member& m) const;
  void broadcast(const Member& m);
  int retransmit_limit() const;
  bool backlogged() const;  // (MembershipConfig::backlog_sync_interval_ns)

  std::vector<const Member*> random_live(size_t k, const std::string& except);

  MembershipConfig cfg_;
  Member self_;
  Transport& transport_;
  std::mt19937_64 rng_;
  std::map<std::string, Member> members_;        // everyone but self
  std::set<std::string> unsettled_;              // ... of them, those not alive (tick())
  std::map<std::string, uint64_t> heard_epoch_;  // heard_epoch()
  std::vector<std::string> probe_order_;
  size_t probe_pos_ = 0;
  std::optional<Probe> probe_;
  std::map<uint64_t, Relay> relays_;
  // Updates to piggyback, with sends left (re-sorted on every send: moved by pointer).
  std::vector<std::pair<std::unique_ptr<const Member>, int>> queue_;
  uint64_t seq_ = 0;
  int64_t next_probe_ns_ = 0;
  int64_t next_sync_ns_ = 0;
  int64_t last_sync_ns_ = 0;
  uint64_t version_at_sync_ = 0;  // version_ at the last push-pull
  int64_t last_heard_ns_ = 0;
  std::vector<std::string> seeds_;
  int64_t next_seed_ns_ = 0;
  int64_t next_gossip_ns_ = 0;
  bool leaving_ = false;
  ChangeFn on_change_;
  uint64_t advert_epoch_ = 0;
  std::string advert_planner_;
  AdvertFn on_advert_;
  HeardFn on_heard_;
  uint64_t book_digest_ = 0;
  BookAdvertFn on_book_advert_;
  OtherFn on_other_;
  std::function<void()> on_misaddressed_;
  ClockSync time_;
  uint64_t version_ = 0;
  uint64_t heard_version_ = 0;
  int64_t now_ = 0;  // the clock at the last tick or message: stamped on what is sent
  std::function<void(int64_t)> on_time_;
};

}  // namespace fg
