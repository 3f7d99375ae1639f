// The admin HTTP port: Prometheus /metrics, /healthz, /readyz, /cluster (JSON), /status
// (JSON: this node now), /overview (JSON: every node's figures and recent past, gathered
// over the peer links) and the cluster page at /. One thread of its own running an Asio
// loop: a slow or idle client holds a socket, never a worker, so probes are answered while
// any number of them dawdle; each connection has a deadline for its request and for its
// reply, and their number is capped. Reads only snapshots and counters, never a shard.
#pragma once
#include <asio.hpp>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "result.hpp"

namespace fg {

struct Services;

class Cluster;
class NodeHistory;

struct AdminCounters {
  std::atomic<uint64_t> reloads_ok{0};
  std::atomic<uint64_t> reloads_failed{0};
  std::atomic<uint64_t> refused{0};   // admin requests without the right bearer token
  std::atomic<uint64_t> dropped{0};   // connections closed past a deadline or over the cap
  std::atomic<uint64_t> gathered{0};  // /overview gatherings (requests alike share one)
};

// The bearer token in `path` (its first non-blank line, surrounding white space dropped);
// or why not, when the file cannot be read or holds no token.
Result<std::string> read_admin_token(const std::string& path);

// The port's limits: what one request may take, and how many may be open at once.
struct AdminLimits {
  int64_t request_deadline_ms = 3000;  // from accept to the request's last header byte
  int64_t reply_deadline_ms = 10000;   // to write the reply
  size_t max_request_bytes = 16 * 1024;
  size_t max_connections = 128;  // past it, the oldest connection still sending is closed
};

// Empty when the node is ready to answer (/readyz, the gateway door's health); else why not.
std::string node_not_ready(const Services& svc);

class AdminHttp {
 public:
  AdminHttp(Services& svc, Cluster* cluster, AdminCounters& counters, AdminLimits limits = {});
  ~AdminHttp();
  // Binds `host:port` (0: a free port) and serves; throws std::runtime_error if it cannot.
  void start(const std::string& host, int port);
  void stop();
  int port() const { return port_; }
  // From now on /cluster, /status and / want `Authorization: Bearer <token>` (empty: open).
  void set_token(std::string token);
  // /healthz answers 503 with this text while it says something (e.g. a stuck script).
  void set_health_check(std::function<std::string()> check) { health_ = std::move(check); }
  // The node's recent past, for /overview (before start(); it must outlive the port).
  void set_history(const NodeHistory* h) { history_ = h; }

  // The bodies, separately callable (tests). `with_keys`: /status names the most-denied
  // keys (with a token, or to a loopback client when no token is set).
  std::string metrics() const;
  std::string cluster_json() const;
  std::string status_json(bool with_keys = true) const;
  // Empty when ready; else why not.
  std::string not_ready() const;

  struct Reply {
    int status = 200;
    std::string type = "text/plain";
    std::string body;
    std::string extra_headers;  // whole lines, each ending in \r\n
  };
  // The answer to one request: its method, its target, its Authorization header, whether
  // the client is on loopback.
  Reply answer(std::string_view method, std::string_view target, std::string_view auth,
               bool loopback) const;
  // /overview: this node's report and every other live member's, asked over the peer links
  // (each given at most kOverviewWaitMs), merged; `done` runs on the admin thread.
  // `query`: the target's part after '?' (history=minutes|hour: the rings to include).
  // Requests alike share one gathering, and its answer serves them for kOverviewReuseMs:
  // however many ask, the members are asked a few times a second at most.
  static constexpr int64_t kOverviewWaitMs = 1000;
  static constexpr int64_t kOverviewReuseMs = 500;
  void overview(std::string_view query, bool with_keys, std::function<void(Reply)> done);

 private:
  class Conn;
  struct Gather;
  static Reply unauthorized();
  void finish(const std::shared_ptr<Gather>& g);
  // (the admin thread's alone) gatherings under way, and the last answers, by what they ask
  std::map<std::string, std::shared_ptr<Gather>> gathering_;
  std::map<std::string, std::pair<int64_t, Reply>> gathered_;  // (steady ms, answer)
  Services& svc_;
  Cluster* cluster_;
  AdminCounters& counters_;
  AdminLimits limits_;
  std::function<std::string()> health_;
  const NodeHistory* history_ = nullptr;
  // Where peer answers are posted to the admin thread; emptied when the port stops (an
  // answer may come from the cluster thread after that).
  struct PostBox {
    std::mutex mu;
    asio::io_context* io = nullptr;
  };
  std::shared_ptr<PostBox> postbox_ = std::make_shared<PostBox>();
  // Whether the request carries the token (or none is set); counts and logs refusals.
  bool allowed(std::string_view auth) const;
  bool has_token() const;
  void accept();
  void admit(std::shared_ptr<Conn> c);
  mutable std::mutex token_mu_;
  std::string token_;
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::deque<std::weak_ptr<Conn>> open_;  // in accept order (the admin thread's alone)
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fg
