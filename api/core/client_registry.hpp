// Every open client connection of the node (RESP, native and gateway), for CLIENT LIST,
// INFO and KILL, INFO, --maxclients and --maxmemory-clients. Touched on connect,
// disconnect, name changes and when a connection's buffers change size, never per command.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "accounts.hpp"

namespace fg {

struct ClientInfo {
  uint64_t id = 0;
  const char* door = "resp";  // which door it came in by: resp, native, rls (CLIENT LIST)
  std::string addr;
  std::string laddr;
  int64_t created_ms = 0;
  // When it last sent a command: monotonic ms (steady_ns() / 1e6), taken from the time its
  // door already read for the command's latency, so no clock is read for it.
  std::atomic<int64_t> last_active_mono_ms{0};
  std::atomic<const char*> last_cmd{"NULL"};
  std::atomic<int> proto{2};
  // Bytes its buffers hold (query, replies), as its connection last reported them; set
  // when the node's client memory is over maxmemory-clients and this one is to go.
  std::atomic<int64_t> mem_bytes{0};
  // Its PUBLISHed messages still on their way to other nodes (counted with its buffers).
  std::shared_ptr<std::atomic<int64_t>> bus_bytes = std::make_shared<std::atomic<int64_t>>(0);
  std::atomic<bool> evict{false};
  std::atomic<bool> gone{false};  // removed from the registry (its memory counts no more)
  // CLIENT KILL chose it: its connection closes when it next looks (woken at once).
  std::atomic<bool> killed{false};
  std::atomic<bool> no_evict{false};  // CLIENT NO-EVICT ON: never chosen
  // Waiting in a blocking pop: its KeyWaiters ticket (0: not waiting), and what CLIENT
  // UNBLOCK asked of it (1: answer as timed out, 2: with -UNBLOCKED).
  std::atomic<uint64_t> block_ticket{0};
  std::atomic<uint8_t> unblock{0};
  // FG.DEADLINE: the deadline this connection stated for its deciding commands, in ms (0:
  // none; -1: the node's request-deadline).
  std::atomic<int64_t> deadline_ms{-1};
  // Its connection's thread only: when the newest input it read reached the host
  // (CLOCK_REALTIME ns, the kernel's receive stamp; 0: not known).
  int64_t received_ns = 0;
  // What CLIENT LIST shows of its session (stored by its connection after each command):
  // channels, patterns and shard channels it hears; commands queued in MULTI (-1: none).
  std::atomic<int32_t> sub{0}, psub{0}, ssub{0}, multi{-1};
  // Set by its connection (ClientRegistry::set_wake, under the registry's mutex): asks it,
  // on its own thread, to look at `evict` now (a client that stopped sending would
  // otherwise hold its buffers until its watchdog's next second).
  std::function<void()> wake;
  // Guarded by the registry's mutex.
  std::string name;
  std::string lib_name;
  std::string lib_ver;
  std::string user = "default";  // the ACL user it authenticated as
  uint16_t account = 0;          // that user's account (accounts.hpp), for its share
};

// Which clients CLIENT LIST and CLIENT KILL mean (Redis's filters, and the door's): a field
// left empty (0, -1) matches every client.
struct ClientFilter {
  enum class Type { kAny, kNormal, kPubsub, kReplica, kMaster };
  uint64_t id = 0;
  Type type = Type::kAny;
  std::string addr, laddr, user;
  std::string door;       // resp, native, rls
  int64_t min_age_s = 0;  // MAXAGE: only those at least this old
  uint64_t skip_id = 0;   // SKIPME: never this one
  // TYPE's names (Redis's, "slave" too); false for another word.
  static bool type_named(std::string_view name, Type& out);
  // DOOR's names (ClientInfo::door's: resp, native, rls); false for another word.
  static bool door_named(std::string_view name, std::string& out);
};

class ClientRegistry {
 public:
  // `max_memory`: maxmemory-clients, the most bytes all connections' buffers may hold
  // together (0: no cap).
  explicit ClientRegistry(size_t max_clients, int64_t max_memory = 0)
      : max_clients_(max_clients), max_memory_(max_memory) {}

  // Null when the node already has max_clients connections.
  // `door`: its door's name (a string that lives as long as the program).
  std::shared_ptr<ClientInfo> add(std::string addr, std::string laddr, int64_t now_ms,
                                  const char* door = "resp");
  void remove(uint64_t id);
  std::shared_ptr<ClientInfo> find(uint64_t id) const;  // null if no such client
  // What a client name, lib-name or lib-ver may hold (Redis's rule: printable ASCII, no
  // spaces), so that each client stays one CLIENT LIST line.
  static bool valid_name(std::string_view n) {
    for (char c : n)
      if (c < '!' || c > '~') return false;
    return true;
  }
  void set_name(ClientInfo& c, std::string name);
  void set_lib(ClientInfo& c, bool is_name, std::string v);
  // The connection is now signed in as `user` (its account `account`); false, and nothing
  // changed, when that user already holds its share of the node's connections.
  bool set_user(ClientInfo& c, std::string user, uint16_t account);
  // Where each user's connections are counted (null: nowhere).
  void set_accounts(Accounts* a) { accounts_ = a; }
  std::string name_of(const ClientInfo& c) const;
  std::string describe(const ClientInfo& c, int64_t now_ms) const;  // one CLIENT LIST line
  std::string list(int64_t now_ms) const;
  std::string list(int64_t now_ms, const ClientFilter& f) const;  // those it matches
  // CLIENT KILL: every client `f` matches is marked (ClientInfo::killed) and woken, so its
  // connection closes on its own thread; how many.
  size_t kill(const ClientFilter& f, int64_t now_ms);
  size_t count() const;
  // Those that came in on local port `port` (the native door's, say).
  size_t count_on_port(int port) const;
  size_t max_clients() const { return max_clients_.load(std::memory_order_relaxed); }
  // maxclients and maxmemory-clients changed at runtime (CONFIG SET): connections over the
  // new maxclients stay, new ones wait for room; over the new memory cap, the biggest go.
  void set_max_clients(size_t n) { max_clients_.store(n, std::memory_order_relaxed); }
  void set_max_memory(int64_t bytes);
  uint64_t total_accepted() const { return next_id_.load() - 1; }
  uint64_t rejected() const { return rejected_.load(); }

  // A connection's buffers now hold `bytes`. Past maxmemory-clients, the biggest clients
  // are marked to go (ClientInfo::evict) until the rest fit; their connections close when
  // they next look (at once if busy, within a second if idle). At most one pass per 100 ms.
  // (grow(): a client a message is pushed to while all clients' memory is past the cap and
  // its margin goes at once, whatever its size.)
  void track(ClientInfo& c, int64_t bytes, int64_t now_ms);
  // Bytes a client's buffers took on between its connection's reports — a message another
  // thread delivered to its mailbox (negative: given back): counted at once under the same
  // rules, so a flood of messages to clients that do not read is seen as it comes, not at
  // their connections' next turn; and past the cap and its margin (memory_margin) the client
  // the message is for goes at once: messages stop piling up while the clients chosen are on
  // their way out. False when the client is to go.
  bool grow(ClientInfo& c, int64_t bytes, int64_t now_ms);
  // What all clients may hold past maxmemory-clients while the biggest are on their way out:
  // an eighth of the cap, at least 1 MB.
  static int64_t memory_margin(int64_t cap) { return std::max<int64_t>(cap / 8, 1 << 20); }
  int64_t memory() const { return memory_.load(std::memory_order_relaxed); }
  int64_t max_memory() const { return max_memory_.load(std::memory_order_relaxed); }
  uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }
  // A connection closed for what it made the node hold, outside track()'s choice.
  void count_eviction() { evicted_.fetch_add(1, std::memory_order_relaxed); }
  void set_wake(ClientInfo& c, std::function<void()> wake) {
    std::lock_guard<std::mutex> g(mu_);
    c.wake = std::move(wake);
  }
  // Wakes every connection to look at itself again now (the users changed: one whose user
  // went, or that hears what its user may no longer, closes).
  void wake_all();

 private:
  std::string describe_locked(const ClientInfo& c, int64_t now_ms) const;
  bool matches_locked(const ClientInfo& c, const ClientFilter& f, int64_t now_ms) const;

  void evict_biggest();
  // After `c` grew the total to `total`: the passes and the margin's rule (track, grow).
  void over_cap(ClientInfo& c, int64_t total, int64_t now_ms, bool pushed);

  std::atomic<size_t> max_clients_;
  std::atomic<int64_t> max_memory_;
  Accounts* accounts_ = nullptr;
  std::atomic<int64_t> memory_{0};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<int64_t> last_pass_ms_{0};
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<ClientInfo>> clients_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace fg
