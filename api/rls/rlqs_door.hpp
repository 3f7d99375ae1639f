// The quota service's transport (RLQS, envoy.service.rate_limit_quota.v3): its
// bidirectional streams on the gateway door's gRPC server and completion queue, served by
// the door's thread. What a report means and what a gateway is assigned is rlqs.cpp's.
#pragma once
#include <grpc/grpc.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "door_tags.hpp"
#include "rlqs.hpp"

namespace fg {

struct Lane;
struct RlqsCall;

// Whether `md` carries "authorization: Bearer <token>" (compared in constant time).
bool door_bearer(const grpc_metadata_array& md, const std::string& token);

class RlqsServer {
 public:
  using Token = std::function<std::shared_ptr<const std::string>()>;
  RlqsServer(Services& svc, RlsRules& rules, RlqsOptions options, Token token);
  ~RlqsServer();
  // Awaits the next stream of `method` on `cq`.
  void arm(grpc_server* server, void* method, grpc_completion_queue* cq);
  // A step of a stream completed (`tag` is one of its; `ok` as gRPC says). `stopping`: no
  // new stream is awaited.
  void event(DoorTag* tag, bool ok, bool stopping, Lane& lane);
  // Hands out the slices due now (the door's thread, between its queue's events).
  void tick(Lane& lane);
  // Nanoseconds until the next slice is due (-1: none).
  int64_t wait_ns() const;

 private:
  void start(RlqsCall& c);
  void run(RlqsCall& c, Lane& lane);
  void send(RlqsCall& c);
  void end(RlqsCall& c, int code, const std::string& text);
  void maybe_free(RlqsCall& c);
  void noted(RlqsCall& c);

  Services& svc_;
  RlsRules& rules_;
  Token token_;
  RlqsQuota quota_;
  grpc_server* server_ = nullptr;
  void* method_ = nullptr;
  grpc_completion_queue* cq_ = nullptr;
  std::vector<std::shared_ptr<RlqsCall>> live_;  // streams open
  uint64_t seen_[3] = {};     // the policies', the rules' and the holders' versions last looked at
  int64_t next_scan_ns_ = 0;  // when the streams are next gone through (clock ns)
};

}  // namespace fg
