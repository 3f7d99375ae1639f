// The gateway door: Envoy's external rate-limit service
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) over gRPC, with
// grpc.health.v1.Health beside it. Each call's descriptors are matched against the loaded
// envoyproxy/ratelimit configuration (rls_config), decoded into Requests for the request
// core — routed, forwarded, replicated and failed over like every other door's — and the
// outcomes encoded as a RateLimitResponse. gRPC's core API, asynchronous: its completion
// queue served by the door's own thread (no thread per call), which is also the I/O lane the
// calls' requests run on.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "result.hpp"

struct grpc_server;
struct grpc_completion_queue;
struct grpc_server_credentials;
struct grpc_resource_quota;

namespace fg {

struct Services;
class RlsRules;

// gRPC's memory quota for the door when maxmemory-clients is 0 (no cap for the others).
constexpr int64_t kDefaultMemoryBytes = int64_t{256} << 20;

struct RlsDoorOptions {
  // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset in response_headers_to_add
  // (upstream's LIMIT_RESPONSE_HEADERS_ENABLED), from the descriptor nearest its limit.
  bool response_headers = false;
  // The ACL user whose rights the door's requests run with (its keys are "rls:...").
  std::string user = "default";
  // TLS: PEM texts; empty cert: plain.
  std::string cert_pem, key_pem, ca_pem;
  enum class ClientCerts { kNone, kOptional, kRequired } client_certs = ClientCerts::kNone;
  // What callers can make the door hold: gRPC's memory for all its connections (its
  // resource quota; past it gRPC refuses new streams and shrinks buffers), and the
  // streams one connection may have open at once.
  int64_t memory_bytes = kDefaultMemoryBytes;
  int max_streams = 1000;
  // Connections at once (rls-maxclients; plain gRPC, whose connections the door accepts);
  // how long one may take to begin (its HTTP/2 preface, or TLS handshake); how long one
  // may stay with no call (0: for ever).
  int64_t max_clients = 1000;
  int64_t handshake_ms = 30'000;
  int64_t idle_ms = 600'000;
  // Counters one domain may have made here (rls_keys.hpp).
  int64_t max_keys_per_domain = 100'000;
  // The quota service (RLQS): how long a slice handed to a gateway lasts (rlqs-slice-ms).
  int64_t rlqs_slice_ms = 1000;
};

class RlqsServer;

class RlsDoor {
 public:
  RlsDoor(Services& svc, RlsRules& rules, RlsDoorOptions options);
  ~RlsDoor();
  // Listens on `host`:`port` (0: a free port); or why not.
  Status start(const std::string& host, int port);
  int port() const { return port_; }
  // What grpc.health.v1.Health answers: SERVING or NOT_SERVING.
  void set_serving(bool serving);
  // The bearer token every ShouldRateLimit call must carry ("authorization: Bearer <t>";
  // empty: none needed). Any thread; in force for the next call.
  void set_token(std::string token);
  bool serving() const { return serving_.load(); }
  // gRPC's memory quota for the door's connections, now (CONFIG SET maxmemory-clients; 0:
  // the default). Any thread.
  void set_memory(int64_t bytes);
  void stop();  // refuses new calls, lets the ones running finish (briefly)

  class Service;

 private:
  void serve();  // the queue's thread
  int listen_plain(const std::string& host, int port, std::string& why);
  void accept_loop();  // rls_accept.cpp
  void release_quota();
  void arm_health();
  void arm_other();
  void health(struct HealthCall* h, bool ok);
  void other(struct OtherCall* o, bool ok);

  Services& svc_;
  RlsRules& rules_;
  RlsDoorOptions options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<RlqsServer> rlqs_;  // the quota service's streams (the queue's thread's)
  grpc_server* server_ = nullptr;
  grpc_completion_queue* cq_ = nullptr;
  void* rls_method_ = nullptr;
  void* health_method_ = nullptr;
  void* rlqs_method_ = nullptr;
  std::thread thread_;  // the queue's
  // Plain gRPC: the door's own listening socket, acceptor thread and gRPC's credentials for
  // the connections it hands over.
  int listen_fd_ = -1;
  int kill_fd_ = -1;  // an eventfd: CLIENT KILL chose one of its connections
  std::thread acceptor_;
  grpc_server_credentials* plain_creds_ = nullptr;
  std::mutex quota_mu_;
  grpc_resource_quota* quota_ = nullptr;  // (held until the door stops)
  int port_ = 0;
  std::atomic<bool> serving_{false};
  std::mutex token_mu_;
  std::shared_ptr<const std::string> token_;
  std::atomic<bool> stopping_{false}, shut_down_{false};
};

}  // namespace fg
