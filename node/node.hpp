// One Floodgate node as an object: everything the executable wires — the shards, the
// policy book, the doors (RESP, TLS, native), the cluster with its replicator and
// forwarder, persistence, bound-lease upkeep and the admin HTTP port — behind start and
// stop. `main()` parses the flags and runs one; a test can run several in one process.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <caf/all.hpp>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "acl.hpp"
#include "admin_http.hpp"
#include "book.hpp"
#include "bound_leases.hpp"
#include "bus_key.hpp"
#include "client_registry.hpp"
#include "clock.hpp"
#include "cluster.hpp"
#include "config.hpp"
#include "forwarding.hpp"
#include "gateway_door.hpp"
#include "history.hpp"
#include "policy_store.hpp"
#include "rls_config.hpp"
#include "script_engine.hpp"
#include "server.hpp"
#include "services.hpp"
#include "snapshotter.hpp"
#include "tls_context.hpp"
#include "user_shares.hpp"

namespace fg {

struct Setting;

// Where a node's cluster traffic travels (null: the real networks, TCP and UDP). Each
// must outlive the node.
struct NodeNets {
  PeerNet* peers = nullptr;
  DatagramNet* datagrams = nullptr;
};

// How a node runs. A process: threads of its own and real ports. The simulator: no thread
// and no socket of the node's own — its owner calls poll() (and runs the actors) from one
// thread, and the ports in the settings are only names in the in-memory networks — and
// `seed` replaces the OS's randomness (ids, lease ids, membership's choices).
struct NodeRun {
  bool polled = false;
  uint64_t seed = 0;  // 0: from the OS
};

class Node {
 public:
  // `cfg`: the settings as parsed, defaults resolved (resolve_defaults). The shards run
  // on `system`; time comes from `clock`; peer requests and gossip travel `nets`. A
  // cluster node without a node id gets a random one here.
  Node(NodeConfig cfg, caf::actor_system& system, const Clock& clock = SystemClock::process(),
       NodeNets nets = {}, NodeRun run = {});
  ~Node();  // stop(), if it was not called
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Loads the users and the snapshot, opens every port, joins the cluster and starts the
  // I/O threads. 0 when serving; otherwise the executable's exit code (2: settings or
  // files that cannot be used, 1: a port that cannot be bound) and `why`.
  int start(std::string& why);
  // What SIGHUP does: the config file's policies, users and log level, the aclfile,
  // renewed TLS certificates, a rotated cluster secret and admin token, each kept as it
  // is when its file is bad.
  void reload();
  // CONFIG SET: each (name, value) read by its settings row, all checked before any is put
  // in force on this running node; "" when done, else the error Redis would answer.
  std::string config_set(const std::vector<std::pair<std::string, std::string>>& pairs);
  // CONFIG REWRITE: the settings CONFIG SET changed, written into the config file in place
  // (each one's top-level line replaced, or added at the end; the rest, comments included,
  // kept); "" when done, else the error Redis would answer.
  std::string config_rewrite();
  // Set by SHUTDOWN (and by request_stop): the owner of the node should call stop().
  bool stop_requested() const { return stopping_.load(); }
  void request_stop(bool save = true);
  // Saves (unless SHUTDOWN NOSAVE), hands this node's slots to the others (a cluster
  // member: Cluster::leave), closes every port and stops the shards. Idempotent.
  void stop();
  // A crash, as far as one process can have one: the node stops at once, saving nothing
  // and handing nothing over (the simulator's kill -9). Idempotent, as stop().
  void halt();

  // Polled nodes (NodeRun::polled): runs what is ready on the node's I/O loops and its
  // cluster loop, without waiting; how many handlers ran. A polled node's stop() does not
  // hand its slots over; begin_leave() then left() until true does, before it.
  // `has_ready`, if given, says which loops have a handler ready: the others are skipped.
  size_t poll(bool (*has_ready)(asio::io_context&) = nullptr);
  void begin_leave();
  bool left();
  // Any thread: while leaving, the slots whose only reachable copy is here (stop() waits
  // for a member to hold them).
  size_t leave_last_copies() const;

  // Serves a client connection on a stream of the caller's making, as the RESP door (or
  // the native door) serves one it accepted: the simulator's in-memory clients.
  void adopt_client(const std::function<std::unique_ptr<ClientStream>(asio::any_io_executor)>& make,
                    bool native = false);

  const NodeConfig& config() const { return cfg_; }
  const std::string& id() const { return cfg_.node_id; }
  int port() const;         // RESP (0: none)
  int tls_port() const;     // RESP over TLS (0: none)
  int native_port() const;  // (0: none)
  int admin_port() const;   // (0: none)
  int rls_port() const;     // (0: none)
  int cluster_port() const { return cluster_port_; }
  Services& services() { return svc_; }

 private:
  void schedule_trim();
  void schedule_save();
  void schedule_renew();
  void schedule_rls();      // the gateway door: its files watched, its health kept
  void schedule_history();  // a point of the node's history each second
  void reload_users(const std::vector<std::string>* from_file);
  int fail(std::string& why, int code, std::string text);
  // start()'s steps, in order, and what they hand each other.
  struct StartState {
    std::string bind_host;                // the first bind address
    std::vector<EntrySnapshot> restored;  // cluster mode: merged at their owners later
    uint64_t restored_epoch = 0;          // (the table epoch they were saved under)
    bool plain = true;                    // plain RESP is served (not TLS only)
    int client_port = 0;                  // the port clients are sent to
    int base_port = 0;                    // the port the other defaults count from
  };
  int start_services(StartState& st, std::string& why);
  int start_shards(StartState& st, std::string& why);
  int start_storage(StartState& st, std::string& why);
  int start_doors(StartState& st, std::string& why);
  int start_cluster(StartState& st, std::string& why);
  int start_admin(StartState& st, std::string& why);
  int join_cluster(StartState& st, std::string& why);
  int start_serving(StartState& st, std::string& why);

  struct Running;      // what the settings rows' apply hooks reach (settings.hpp, RunningNode)
  std::mutex set_mu_;  // one CONFIG SET, REWRITE or SIGHUP reload at a time
  std::vector<const Setting*> set_at_runtime_;  // what CONFIG SET changed (for REWRITE)
  std::shared_ptr<ConnectionLimits> conn_limits_;
  NodeConfig cfg_;
  NodeConfig shown_;  // the settings in force, as CONFIG GET answers them (ports bound, ...)
  std::mutex shown_mu_;
  caf::actor_system& system_;
  const Clock& clock_;
  NodeNets nets_;
  NodeRun run_;
  AclBook acl_;
  // What each user holds of the node, and its caps (declared before the shards that count
  // into it and the doors that read it).
  std::shared_ptr<Accounts> accounts_ = std::make_shared<Accounts>();
  std::vector<UserLimits> user_limits_;
  std::mutex shares_mu_;
  void apply_shares();  // every user's caps, from user-share and user-limits
  PolicyRegistry policies_;
  Book book_;
  PolicyStore policy_store_;
  ClientRegistry clients_;
  RequestMetrics metrics_;
  Services svc_;
  BoundLeases bound_;
  std::unique_ptr<ScriptCache> script_cache_;
  std::unique_ptr<ScriptEngine> scripts_;
  std::unique_ptr<ShardPool> pool_;
  std::unique_ptr<Snapshotter> snapshots_;
  std::unique_ptr<Server> server_;
  TlsContexts tls_;
  BusKey bus_key_;
  // The node's recent past (the admin port's /overview, other nodes' cluster views);
  // destroyed after the cluster whose thread answers from it.
  std::unique_ptr<NodeHistory> history_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<ClusterForwarder> forwarder_;
  std::unique_ptr<SteadyTimer> trim_timer_, save_timer_, renew_timer_, rls_timer_, history_timer_;
  std::unique_ptr<RlsRules> rls_rules_;  // rls-config's rules (or none, with rls-port alone)
  std::unique_ptr<GatewayDoor> rls_;
  uint64_t closed_at_trim_ = 0;
  std::future<void> trimming_;  // a malloc_trim under way (schedule_trim)
  AdminCounters admin_counters_;
  std::unique_ptr<AdminHttp> admin_;
  int cluster_port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> save_on_exit_{true};
  bool started_ = false;  // start() returned 0
  bool stopped_ = false;
  bool halted_ = false;  // halt(): stopped without saving or leaving
};

}  // namespace fg
