// The admin HTTP port: Prometheus /metrics, /healthz, /readyz, /cluster (JSON), /status
// (JSON for the page) and the live status page at /. Runs on threads of its own (cpp-httplib);
// reads only snapshots and counters, never touches a shard.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "services.hpp"

namespace httplib {
class Server;
}

namespace fg {

class Cluster;

struct AdminCounters {
  std::atomic<uint64_t> reloads_ok{0};
  std::atomic<uint64_t> reloads_failed{0};
  std::atomic<uint64_t> refused{0};  // admin requests without the right bearer token
};

// The bearer token in `path` (its first non-blank line, surrounding white space dropped);
// std::nullopt, with `why`, when the file cannot be read or holds no token.
std::optional<std::string> read_admin_token(const std::string& path, std::string& why);

class AdminHttp {
 public:
  AdminHttp(Services& svc, Cluster* cluster, AdminCounters& counters);
  ~AdminHttp();
  // Binds `host:port` (0: a free port) and serves; throws std::runtime_error if it cannot.
  void start(const std::string& host, int port);
  void stop();
  int port() const { return port_; }
  // From now on /cluster, /status and / want `Authorization: Bearer <token>` (empty: open).
  void set_token(std::string token);

  // The bodies, separately callable (tests).
  std::string metrics() const;
  std::string cluster_json() const;
  std::string status_json() const;
  // Empty when ready; else why not.
  std::string not_ready() const;

 private:
  Services& svc_;
  Cluster* cluster_;
  AdminCounters& counters_;
  // Whether the request carries the token (or none is set); counts and logs refusals.
  bool allowed(const std::string& auth) const;
  mutable std::mutex token_mu_;
  std::string token_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fg
