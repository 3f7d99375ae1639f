// What a ShouldRateLimit call means, apart from gRPC: its descriptors matched against the
// loaded rules (rls_config) and made into the request core's Requests, and their Outcomes
// made into the RateLimitResponse — upstream's statuses, limits, counters and headers. The
// door (rls_door.cpp) is the transport around it; tests drive it directly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acl.hpp"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "request.hpp"
#include "rls_config.hpp"
#include "rls_keys.hpp"

namespace fg {

struct Services;

// How a call ends when it is not answered with statuses, in gRPC's status codes (their
// numbers: the door hands them to gRPC as they are).
enum class RlsStatusCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kInternal = 13,
  kUnavailable = 14,
};
struct RlsStatus {
  RlsStatusCode code = RlsStatusCode::kOk;
  std::string message;
  bool ok() const { return code == RlsStatusCode::kOk; }
};

// One call's translation: the request as parsed, what each descriptor matched, the requests
// for the core, and the response made from their outcomes. Used again call after call.
struct RlsCallState {
  envoy::service::ratelimit::v3::RateLimitRequest request;
  envoy::service::ratelimit::v3::RateLimitResponse* response = nullptr;  // (the caller's)
  std::shared_ptr<const RlsConfig> cfg;
  std::shared_ptr<const AclUser> user;
  FailMode mode = FailMode::kError;
  struct Item {
    const RlsLimit* limit = nullptr;  // null: OK without current_limit
    RlsLimit own;                     // the caller's override (descriptor.limit)
    RlsStats* stats = nullptr;
    bool unlimited = false;
    uint64_t hits = 1;
    int job = -1;             // its request's index, or -1: answered here
    LimitSpec spec;           // what it was asked with
    bool zero_limit = false;  // requests_per_unit 0: over, whatever the count
  };
  std::vector<Item> items;
  std::vector<std::string> keys;  // the requests' keys (sized before use: they stay put)
  std::vector<Request> requests;
  // Who calls (the connection's peer address): the counters it makes are its own
  // (rls_keys.hpp); and the counters forgotten to make room, reset with the call's requests.
  std::string caller;
  std::vector<std::string> evicted;
};

// One per thread that serves calls (it keeps that thread's copies of the user and the
// rules, and the counters each domain has made: rls_keys.hpp).
class RlsTranslator {
 public:
  // `user`: the ACL user the door's requests run as; `response_headers`: RateLimit-* in
  // response_headers_to_add; `keys`: the counters each domain has made (shared by the door's
  // threads).
  RlsTranslator(Services& svc, RlsRules& rules, std::string user, bool response_headers,
                std::shared_ptr<RlsKeys> keys);
  ~RlsTranslator();
  RlsTranslator(const RlsTranslator&) = delete;
  RlsTranslator& operator=(const RlsTranslator&) = delete;

  // c.request's descriptors into c.requests (none: c.response is made from the rules alone,
  // by answer(c, nullptr)); or why the call is refused (bad input, rights, no room).
  RlsStatus prepare(RlsCallState& c);
  // The outcomes of c.requests (null when it made none) into *c.response; or the status
  // the whole call ends with (a request the cluster could not decide).
  RlsStatus answer(RlsCallState& c, const Outcome* outcomes);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fg
