// The gateway door's state that its connections share: Envoy's rate-limit service
// (ShouldRateLimit), its quota service (StreamRateLimitQuotas) and gRPC health, served over
// HTTP/2 by GrpcSession on the node's connection shell — the node's I/O threads, its TLS,
// CLIENT LIST, maxclients and maxmemory-clients, as every door's connections. Here: the
// options, the rules, the bearer token, whether health says SERVING, each I/O lane's own
// translator and quota service, and how many connections the door has.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rlqs.hpp"
#include "rls_config.hpp"
#include "rls_translate.hpp"

namespace fg {

struct Services;

struct GatewayOptions {
  // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset in response_headers_to_add
  // (upstream's LIMIT_RESPONSE_HEADERS_ENABLED), from the descriptor nearest its limit.
  bool response_headers = false;
  // The ACL user whose rights the door's requests run with (its keys are "rls:...").
  std::string user = "default";
  // Streams one connection may have open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS,
  // enforced from each stream's first HEADERS, acknowledged or not).
  int max_streams = 1000;
  // Connections at once (rls-maxclients); how long one may take to begin (its HTTP/2
  // preface) and a call to arrive whole; how long one may stay with no stream (0: for ever).
  int64_t max_clients = 1000;
  int64_t handshake_ms = 30'000;
  int64_t idle_ms = 600'000;
  // Counters one domain may have made here (rls_keys.hpp).
  int64_t max_keys_per_domain = 100'000;
  // The quota service (RLQS): how long a slice handed to a gateway lasts (rlqs-slice-ms).
  int64_t rlqs_slice_ms = 1000;
};

class GatewayDoor {
 public:
  // `lanes`: the node's I/O threads (each has its own translator and quota service).
  GatewayDoor(Services& svc, RlsRules& rules, GatewayOptions options, size_t lanes);
  ~GatewayDoor();

  const GatewayOptions& options() const { return options_; }
  RlsRules& rules() { return rules_; }
  Services& services() { return svc_; }

  // What grpc.health.v1.Health answers: SERVING or NOT_SERVING.
  void set_serving(bool serving) { serving_.store(serving, std::memory_order_relaxed); }
  bool serving() const { return serving_.load(std::memory_order_relaxed); }
  // The bearer token every call but health must carry ("authorization: Bearer <t>"; empty:
  // none). Any thread; in force for the next call.
  void set_token(std::string token);
  std::shared_ptr<const std::string> token() const;

  // An I/O lane's own parts (used only by that lane's thread: no lock).
  struct LaneParts {
    RlsTranslator translate;
    RlqsQuota quota;
    LaneParts(Services& svc, RlsRules& rules, const GatewayOptions& o,
              std::shared_ptr<RlsKeys> call_keys, std::shared_ptr<RlsKeys> bucket_keys);
  };
  LaneParts& lane(size_t i) { return *lanes_[i % lanes_.size()]; }

  // A new connection may come in (under rls-maxclients; counted), or not (refused, counted).
  bool admit();
  void left();  // a connection admitted is gone
  // At rls-maxclients already: a new connection is closed as it comes (counted), before it
  // is one of the node's clients.
  bool refuse_new();
  int64_t connections() const { return rules_.stats().connections.load(); }

 private:
  Services& svc_;
  RlsRules& rules_;
  const GatewayOptions options_;
  std::vector<std::unique_ptr<LaneParts>> lanes_;
  std::atomic<bool> serving_{false};
  mutable std::mutex token_mu_;
  std::shared_ptr<const std::string> token_;
};

}  // namespace fg
