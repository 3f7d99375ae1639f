// Pub/sub: which of this node's connections hear which channel, and the messages on their
// way to them. PUBLISH runs on whichever thread took it (an I/O thread, a shard running a
// script, the cluster thread for a message from another node); each subscribed
// connection has a Subscriber, a mailbox the publisher appends the message to, already in
// the connection's protocol, and which wakes the connection to take it on its own thread.
//
// Nothing is kept: a message reaches the connections subscribed when it is published, as
// in Redis. A mailbox past client-output-buffer-limit's pubsub hard limit (counting what
// its connection has not sent yet) takes no more: its connection is closed.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "accounts.hpp"

namespace fg {

class Cluster;
struct Services;

// Channels (SUBSCRIBE, PUBLISH) and shard channels (SSUBSCRIBE, SPUBLISH) are separate
// namespaces, as in Redis; patterns (PSUBSCRIBE) match channels only.
enum class ChannelKind : uint8_t { kChannel = 0, kShard = 1 };

class Subscriber {
 public:
  // `wake`: asks the connection, from any thread, to take what arrived (take()); called
  // when the mailbox stops being empty. `hard_bytes`: the most its messages and the
  // connection's unsent replies may hold together (0: no limit).
  // `meter`: counts bytes the mailbox took on (or gave back) against the client's memory
  // (maxmemory-clients) as they come; false when the client is to go — its mailbox is
  // emptied then and takes no more, as past the hard limit (null: not counted).
  Subscriber(std::function<void()> wake, int64_t hard_bytes,
             std::function<bool(int64_t)> meter = nullptr)
      : wake_(std::move(wake)), meter_(std::move(meter)), hard_bytes_(hard_bytes) {}

  // A message for this connection (any thread), as RESP2 writes it (encode_message): a
  // RESP3 connection gets it as a push.
  void deliver(std::string_view encoded);
  // On the connection's thread: appends what arrived to `out`. False once the mailbox has
  // overflowed (the connection must close; nothing more is delivered).
  bool take(std::string& out);
  size_t waiting_bytes() const;
  // What the connection holds unsent (its output and the stream's), counted against the
  // hard limit with the mailbox.
  void set_unsent(int64_t bytes) { unsent_.store(bytes, std::memory_order_relaxed); }
  void set_proto(int proto) { proto_.store(proto, std::memory_order_relaxed); }

 private:
  mutable std::mutex mu_;
  std::string inbox_;
  bool overflowed_ = false;
  std::function<void()> wake_;
  std::function<bool(int64_t)> meter_;
  const int64_t hard_bytes_;
  std::atomic<int64_t> unsent_{0};
  std::atomic<int> proto_{2};
};

class PubSubHub {
 public:
  // Adds or removes one subscription; true if it changed anything.
  bool subscribe(Subscriber* s, ChannelKind k, std::string_view channel);
  bool unsubscribe(Subscriber* s, ChannelKind k, std::string_view channel);
  bool psubscribe(Subscriber* s, std::string_view pattern);
  bool punsubscribe(Subscriber* s, std::string_view pattern);

  // Delivers to this node's subscribers: those of the channel, then (channels only) those
  // of each matching pattern; how many deliveries were made (PUBLISH's reply).
  int64_t publish(ChannelKind k, std::string_view channel, std::string_view message);
  // publish(), then the message goes to the other nodes of the cluster, if any; -1 (and
  // not published anywhere) when the bus already carries kMaxBusBytes of messages on their
  // way. `by`: the publishing connection, whose memory (maxmemory-clients) counts its
  // messages until every node took them.
  int64_t publish_everywhere(ChannelKind k, std::string_view channel, std::string_view message,
                             std::shared_ptr<std::atomic<int64_t>> by = nullptr);
  // Sends a message to the other nodes; false when the bus has no room for it.
  using Propagate = std::function<bool(ChannelKind, std::string_view, std::string_view,
                                       std::shared_ptr<std::atomic<int64_t>>)>;
  // Bytes of messages the cluster bus may carry towards other nodes at once (each copy to
  // each node): past it a PUBLISH is refused rather than queued, so a flood cannot swamp the
  // peer links and the cluster thread that gossip and forwards share.
  static constexpr int64_t kMaxBusBytes = 16 << 20;
  std::atomic<int64_t> bus_bytes{0};     // on their way now
  std::atomic<uint64_t> bus_refused{0};  // PUBLISHes refused for it (INFO)
  // How a message reaches the other nodes (set once, before clients come).
  void set_propagate(Propagate p) { propagate_ = std::move(p); }

  // PUBSUB CHANNELS / SHARDCHANNELS (matching `pattern`, or all when null), NUMSUB, NUMPAT.
  std::vector<std::string> channels(ChannelKind k, const std::string_view* pattern) const;
  int64_t numsub(ChannelKind k, std::string_view channel) const;
  int64_t numpat() const;
  int64_t channel_count(ChannelKind k) const;  // (INFO's pubsub_channels)

  // For INFO and /metrics.
  std::atomic<uint64_t> published{0};  // PUBLISH/SPUBLISH taken here (from clients, scripts)
  std::atomic<uint64_t> received{0};   // from other nodes
  std::atomic<uint64_t> delivered{0};  // messages handed to subscribers
  // Subscriptions of every connection here (channels, patterns, shard channels), against
  // max-subscriptions.
  std::atomic<int64_t> subscriptions{0};

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::unordered_set<Subscriber*>> channels_[2];
  std::map<std::string, std::unordered_set<Subscriber*>, std::less<>> patterns_;
  Propagate propagate_;
};

// One connection's subscriptions, kept by its session on the connection's thread. Counts
// are Redis's: SUBSCRIBE and PSUBSCRIBE share one, SSUBSCRIBE has its own.
class Subscriptions {
 public:
  explicit Subscriptions(PubSubHub& hub) : hub_(hub) {}
  ~Subscriptions() { clear(); }
  Subscriptions(const Subscriptions&) = delete;
  Subscriptions& operator=(const Subscriptions&) = delete;

  // The connection's wake and its hard limit: needed before the first subscription.
  void set_wake(std::function<void()> wake, int64_t hard_bytes,
                std::function<bool(int64_t)> meter = nullptr) {
    wake_ = std::move(wake);
    hard_bytes_ = hard_bytes;
    meter_ = std::move(meter);
  }
  void set_proto(int proto);

  bool subscribe(ChannelKind k, std::string_view channel);
  bool unsubscribe(ChannelKind k, std::string_view channel);
  bool psubscribe(std::string_view pattern);
  bool punsubscribe(std::string_view pattern);
  bool has(ChannelKind k, std::string_view channel) const {
    return channels_[static_cast<int>(k)].count(channel) != 0;
  }
  bool has_pattern(std::string_view pattern) const { return pattern_set_.count(pattern) != 0; }
  // Whose subscriptions these are (their user's account, in `accounts`): counted there
  // against the user's share; a change of user moves what is counted.
  void set_owner(Accounts* accounts, uint16_t account);
  // Whether one more subscription fits: the node's (under `node_cap`, max-subscriptions)
  // and its user's share of them.
  bool room(int64_t node_cap) const;
  // UNSUBSCRIBE / SUNSUBSCRIBE / PUNSUBSCRIBE with no argument: what to let go of.
  std::vector<std::string> channels(ChannelKind k) const;
  std::vector<std::string> patterns() const { return patterns_; }
  // Lets go of every subscription (the connection closes, RESET).
  void clear();

  int64_t count() const { return static_cast<int64_t>(channels_[0].size() + patterns_.size()); }
  int64_t channel_count() const { return static_cast<int64_t>(channels_[0].size()); }
  int64_t pattern_count() const { return static_cast<int64_t>(patterns_.size()); }
  int64_t shard_count() const { return static_cast<int64_t>(channels_[1].size()); }
  bool active() const { return count() + shard_count() > 0; }
  // What the subscriptions hold, for maxmemory-clients.
  int64_t held_bytes() const { return held_bytes_; }
  Subscriber* subscriber() const { return sub_.get(); }

 private:
  Subscriber& ensure();
  PubSubHub& hub_;
  std::function<void()> wake_;
  int64_t hard_bytes_ = 0;
  std::function<bool(int64_t)> meter_;
  int proto_ = 2;
  std::unique_ptr<Subscriber> sub_;
  std::set<std::string, std::less<>> channels_[2];
  std::vector<std::string> patterns_;               // in the order given (Redis's list)
  std::set<std::string, std::less<>> pattern_set_;  // (the same, to look up)
  int64_t held_bytes_ = 0;
  Accounts* accounts_ = nullptr;
  uint16_t account_ = 0;
  void counted(int64_t n);  // n subscriptions more (or fewer) for the node and the owner
};

// In a cluster: every message published here goes to every other live node over the bus
// (Redis Cluster's way), and those from other nodes reach this node's subscribers.
void carry_publishes(Cluster& cluster, Services& svc);

// A message as a subscriber receives it in RESP2: ["message" or "smessage", channel,
// message], or ["pmessage", pattern, channel, message] when `pattern` is given; into `out`.
void encode_message(std::string& out, std::string_view kind, const std::string_view* pattern,
                    std::string_view channel, std::string_view message);

// A message from another node (cluster bus), and its encoding on the wire.
std::string encode_published(ChannelKind k, std::string_view channel, std::string_view message);
bool decode_published(std::string_view body, ChannelKind& k, std::string_view& channel,
                      std::string_view& message);

}  // namespace fg
