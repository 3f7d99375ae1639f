// ShouldRateLimit: descriptors -> limits (rls_config) -> Requests -> the core -> statuses.
#include "rls_door.hpp"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "command_table.hpp"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "errors.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "io_batcher.hpp"
#include "key_table.hpp"
#include "request_job.hpp"
#include "rls_config.hpp"
#include "services.hpp"

namespace fg {

namespace rls = envoy::service::ratelimit::v3;
using RlsCode = rls::RateLimitResponse::Code;

namespace {

// Upstream's NEAR_LIMIT_RATIO: a hit past this share of the limit is "near" it.
constexpr double kNearLimitRatio = 0.8;
// Bounds on one call (a gateway sends a few descriptors of a few entries each).
constexpr int kMaxDescriptors = 1024;
constexpr int kMaxEntries = 64;
constexpr int kMaxReceiveBytes = 1 << 20;
// Completion queues (a thread each), and the calls each keeps awaited.
constexpr int kQueues = 1;  // (Service keeps per-thread copies: one queue only)
static_assert(kQueues == 1);
constexpr int kArmed = 64;
constexpr size_t kBatchCalls = 256;  // calls in one request job, at most
constexpr auto kLanePoll = std::chrono::microseconds(100);
// Where the door's counters live in the keyspace (ACL key patterns can fence them).
constexpr std::string_view kKeyPrefix = "rls:";

bool rate_kind(Kind k) {
  return k == Kind::kTokenBucket || k == Kind::kGcra || k == Kind::kFixedWindow ||
         k == Kind::kSlidingLog || k == Kind::kSlidingWindow || k == Kind::kCalendarWindow;
}

// The unit a policy's period is, when it is exactly one (else unknown).
RlsUnit unit_of_period(int64_t ns) {
  for (RlsUnit u : {RlsUnit::kSecond, RlsUnit::kMinute, RlsUnit::kHour, RlsUnit::kDay,
                    RlsUnit::kWeek, RlsUnit::kMonth, RlsUnit::kYear}) {
    if (rls_unit_seconds(u) * 1'000'000'000 == ns) return u;
  }
  return RlsUnit::kUnknown;
}

}  // namespace

// What a completion queue hands back: a health check or a ShouldRateLimit call.
struct DoorTag {
  bool health = false;
  bool finishing = false;  // its answer is on its way: the next completion is its last
};

// grpc.health.v1.Health/Check, answered at once.
struct HealthCall : DoorTag {
  grpc::ServerContext ctx;
  grpc::health::v1::HealthCheckRequest request;
  grpc::ServerAsyncResponseWriter<grpc::health::v1::HealthCheckResponse> responder{&ctx};
  HealthCall() { health = true; }
};

// One call on its way: gRPC's side of it (the completion queue's tag), what each descriptor
// matched and where its outcome will be.
struct RlsCall : DoorTag {
  // gRPC's: the call is this object's until its last completion (`finishing`), held by
  // `self` until then (and by the request job while one runs).
  grpc::ServerContext ctx;
  grpc::ByteBuffer in;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder{&ctx};
  std::shared_ptr<RlsCall> self;
  void finish(const grpc::ByteBuffer& out) {
    finishing = true;
    responder.Finish(out, grpc::Status::OK, this);
  }
  void fail(const grpc::Status& st) {
    finishing = true;
    responder.FinishWithError(st, this);
  }

  rls::RateLimitRequest request;
  rls::RateLimitResponse response;
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
  std::vector<std::string> keys;  // the requests' keys (reserved: they stay put)
  std::vector<Request> requests;
};

// The method takes raw bytes: a request that is no RateLimitRequest gets INVALID_ARGUMENT
// (gRPC's own parsing would answer UNIMPLEMENTED, as if the method did not exist). Calls are
// taken from completion queues by the door's own threads (the asynchronous API: no thread
// per call, and no hand-over between gRPC's poller and executor threads per call).
class RlsDoor::Service final
    : public rls::RateLimitService::WithRawMethod_ShouldRateLimit<rls::RateLimitService::Service> {
 public:
  Service(Services& svc, RlsRules& rules, const RlsDoorOptions& options)
      : svc_(svc), rules_(rules), options_(options) {}

  // Waits for the next call on `cq`.
  void arm(grpc::ServerCompletionQueue* cq) {
    auto c = std::make_shared<RlsCall>();
    c->self = c;
    RequestShouldRateLimit(&c->ctx, &c->in, &c->responder, cq, cq, c.get());
  }

  // A call arrived: answered here (bad input, nothing to count), or its requests join
  // `batch` for the core.
  void handle(RlsCall& c, std::vector<std::shared_ptr<RlsCall>>& batch) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    if (!grpc::SerializationTraits<rls::RateLimitRequest>::Deserialize(&c.in, &c.request).ok()) {
      rules_.stats().invalid.fetch_add(1, std::memory_order_relaxed);
      return c.fail({grpc::StatusCode::INVALID_ARGUMENT, "the request is not a RateLimitRequest"});
    }
    grpc::Status bad = prepare(c);
    if (!bad.ok()) {
      rules_.stats().invalid.fetch_add(1, std::memory_order_relaxed);
      return c.fail(bad);
    }
    if (c.requests.empty()) return answer(c, nullptr);
    batch.push_back(c.self);
  }

  // The calls a queue had ready at once go to one I/O lane as one request job: one
  // hand-over between threads for them all, and one flight.
  void submit(std::vector<std::shared_ptr<RlsCall>>& batch, Lane& lane) {
    if (batch.empty()) return;
    auto calls = std::make_shared<std::vector<std::shared_ptr<RlsCall>>>(std::move(batch));
    batch.clear();
    std::vector<Request> requests;
    std::vector<size_t> first;  // per call: where its requests start
    for (auto& c : *calls) {
      first.push_back(requests.size());
      requests.insert(requests.end(), c->requests.begin(), c->requests.end());
    }
    Door door;
    door.mode = RouteMode::kForward;
    ++awaiting_;
    RequestJob::start_here(svc_, lane, std::move(requests), door, calls,
                           [this, calls, first = std::move(first)](std::vector<Outcome>& outcomes) {
                             --awaiting_;
                             for (size_t i = 0; i < calls->size(); ++i) {
                               answer(*(*calls)[i], outcomes.data() + first[i]);
                             }
                           });
  }
  // Request jobs not yet back (touched by the queue's thread only).
  int awaiting() const { return awaiting_; }

  // gRPC is done with a call.
  void done(RlsCall& c) {
    if (c.finishing) in_flight_.fetch_sub(1, std::memory_order_relaxed);
    c.self.reset();  // (last: it may free `c`)
  }
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  // The user the door acts as and the rules, looked up again only when they change (the
  // queue's thread's own copies: no lock, no reference counted per call).
  const std::shared_ptr<const AclUser>& user() {
    if (!user_ || user_version_ != svc_.acl->version()) {
      user_version_ = svc_.acl->version();
      user_ = svc_.acl->find(options_.user);
    }
    return user_;
  }
  const std::shared_ptr<const RlsConfig>& config() {
    if (!cfg_ || cfg_version_ != rules_.version()) {
      cfg_version_ = rules_.version();
      cfg_ = rules_.get();
    }
    return cfg_;
  }

  grpc::Status prepare(RlsCall& c) {
    const rls::RateLimitRequest& req = c.request;
    if (req.domain().empty()) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "rate limit domain must not be empty"};
    }
    if (req.descriptors().empty()) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "rate limit descriptor list must not be empty"};
    }
    if (req.descriptors_size() > kMaxDescriptors) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "too many descriptors: at most " + std::to_string(kMaxDescriptors)};
    }
    c.user = user();
    if (!c.user || !c.user->enabled()) {
      return {grpc::StatusCode::PERMISSION_DENIED,
              "the rls-user '" + options_.user + "' does not exist or is disabled"};
    }
    c.cfg = config();
    const RlsDomain* domain = c.cfg->domain(req.domain());
    if (domain) {
      c.mode = domain->on_unavailable;
    } else {
      rules_.stats().domain_not_found.fetch_add(1, std::memory_order_relaxed);
    }
    std::shared_ptr<const PolicySet> policies;
    c.items.resize(req.descriptors_size());
    std::vector<RlsEntry>& entries = entries_;
    std::vector<std::string_view>& replaced = replaced_;
    replaced.clear();
    c.keys.reserve(static_cast<size_t>(req.descriptors_size()));
    for (int i = 0; i < req.descriptors_size(); ++i) {
      const auto& d = req.descriptors(i);
      RlsCall::Item& it = c.items[i];
      if (d.entries_size() > kMaxEntries) {
        return {grpc::StatusCode::INVALID_ARGUMENT, "too many entries in descriptor " +
                                                        std::to_string(i) + ": at most " +
                                                        std::to_string(kMaxEntries)};
      }
      entries.clear();
      for (const auto& e : d.entries()) entries.push_back({e.key(), e.value()});
      it.hits =
          d.has_hits_addend() ? d.hits_addend().value() : std::max<uint64_t>(1, req.hits_addend());
      if (it.hits > static_cast<uint64_t>(kMaxCount)) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "hits_addend of descriptor " + std::to_string(i) + " is too large"};
      }
      std::string counter;
      if (d.has_limit()) {
        // The caller's own limit: never shadow, counted under the descriptor's key.
        const int unit = d.limit().unit();
        if (unit < 1 || unit > 6) {
          return {grpc::StatusCode::INVALID_ARGUMENT,
                  "descriptor " + std::to_string(i) + " has a limit override without a unit"};
        }
        it.own.requests_per_unit = d.limit().requests_per_unit();
        it.own.unit = static_cast<RlsUnit>(unit);
        std::string stats_key;
        counter.assign(req.domain()).append("_");
        for (const RlsEntry& e : entries) {
          stats_key.append(stats_key.empty() ? "" : ".").append(e.key);
          if (!e.value.empty()) stats_key.append("_").append(e.value);
          counter.append(e.key).append("_").append(e.value).append("_");
        }
        it.own.full_key = req.domain() + "." + stats_key;
        it.stats = rules_.stats().get(req.domain(), stats_key,
                                      rules_.stats().get(req.domain(), "(limit override)"));
        it.limit = &it.own;
      } else {
        RlsMatch m = c.cfg->match(req.domain(), entries, rules_.stats());
        if (!m.limit) continue;
        for (const std::string& r : m.limit->replaces) replaced.push_back(r);
        if (m.limit->unlimited) {
          it.unlimited = true;
          continue;
        }
        it.limit = m.limit;
        it.stats = m.stats;
        counter = std::move(m.counter);
      }
      // The counter's key: upstream's cache key without the window's start (the window is
      // the limiter's), with the unit (a changed unit is a new counter, as upstream's).
      std::string key(kKeyPrefix);
      key += counter;
      const RlsLimit& l = *it.limit;
      if (!l.policy.empty()) {
        if (!policies) policies = svc_.policies->snapshot();
        key += "policy:" + l.policy;
        auto spec = policies->resolve(key, l.policy);
        if (!spec.ok()) {
          return {grpc::StatusCode::FAILED_PRECONDITION,
                  l.full_key + ": " + std::string(spec.error())};
        }
        if (!rate_kind(spec->kind)) {
          return {grpc::StatusCode::FAILED_PRECONDITION,
                  l.full_key + ": policy '" + l.policy + "' is not a rate limit"};
        }
        it.spec = *spec;
        it.spec.shadow = it.spec.shadow || l.shadow;
      } else {
        key += std::to_string(rls_unit_seconds(l.unit));
        if (l.requests_per_unit == 0) {
          it.zero_limit = true;
          continue;
        }
        it.spec = LimitSpec::window(Kind::kFixedWindow, l.requests_per_unit,
                                    rls_unit_seconds(l.unit) * 1'000'000'000);
        it.spec.count_denied = true;
        it.spec.shadow = l.shadow;
      }
      it.spec.on_unavailable = c.mode;
      if (key.size() > kMaxKeyLen) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "descriptor " + std::to_string(i) + " is too long: its counter's key (domain, " +
                    "keys and values) would pass " + std::to_string(kMaxKeyLen) + " bytes"};
      }
      it.job = 0;  // (numbered below, once replaces are known)
      c.keys.push_back(std::move(key));
    }
    // A limit another matched limit replaces is dropped (OK, without current_limit).
    size_t key_index = 0;
    for (RlsCall::Item& it : c.items) {
      if (it.job < 0) continue;
      const std::string& key = c.keys[key_index++];
      if (!it.limit->name.empty() &&
          std::find(replaced.begin(), replaced.end(), it.limit->name) != replaced.end()) {
        it.job = -1;
        it.limit = nullptr;
        continue;
      }
      if (!c.user->unrestricted()) {
        if (grpc::Status refused = acl_check(*c.user, it.hits == 0, key); !refused.ok()) {
          return refused;
        }
      }
      Request r;
      r.verb = it.hits == 0 ? Verb::kPeek : Verb::kTake;
      r.metric = kRlsCommandId;
      r.key = key;
      r.spec = it.spec;
      r.cost = static_cast<int64_t>(it.hits);
      r.asker = c.user.get();
      r.command = it.hits == 0 ? "fg.peek" : "fg.take";
      it.job = static_cast<int>(c.requests.size());
      c.requests.push_back(r);
    }
    return grpc::Status::OK;
  }

  // The door's user's rights on a take (or a check: a peek) of `key`, as the RESP door
  // checks FG.TAKE and FG.PEEK; a refusal goes to ACL LOG. (The key's owner checks again.)
  grpc::Status acl_check(const AclUser& user, bool peek, std::string_view key) {
    const AclCatalog& catalog = svc_.acl->catalog();
    const int entry = catalog.find(peek ? "fg.peek" : "fg.take");
    if (entry < 0) return grpc::Status::OK;
    acl_words_.assign({catalog.at(entry).name, key});
    size_t pos = 0;
    const AclDenied d = user.check(entry, acl_words_, &pos);
    if (d == AclDenied::kNone) return grpc::Status::OK;
    svc_.acl->refused(d, "toplevel", d == AclDenied::kKey ? key : catalog.at(entry).name,
                      user.name(), "gateway door (rls-port)");
    return {grpc::StatusCode::PERMISSION_DENIED, acl_denied_error(catalog, d, entry)};
  }

  // Upstream's counters for one decision: `before` and `after` the hits, against `limit`.
  static void count(RlsStats& s, uint64_t limit, uint64_t before, uint64_t after, uint64_t hits,
                    bool over, bool shadow) {
    const auto near = static_cast<uint64_t>(
        static_cast<double>(static_cast<float>(limit) * static_cast<float>(kNearLimitRatio)));
    s.total_hits.fetch_add(hits, std::memory_order_relaxed);
    if (over) {
      if (before >= limit) {
        s.over_limit.fetch_add(hits, std::memory_order_relaxed);
      } else {
        s.over_limit.fetch_add(after - limit, std::memory_order_relaxed);
        s.near_limit.fetch_add(limit - std::max(near, before), std::memory_order_relaxed);
      }
      if (shadow) {
        s.shadow_mode.fetch_add(before >= limit ? hits : after - limit, std::memory_order_relaxed);
      }
    } else {
      if (after > near) {
        s.near_limit.fetch_add(before >= near ? hits : after - near, std::memory_order_relaxed);
      }
      s.within_limit.fetch_add(hits, std::memory_order_relaxed);
    }
  }

  static void set_limit(rls::RateLimitResponse::DescriptorStatus& st, const RlsLimit& l,
                        uint32_t rpu, RlsUnit unit) {
    auto* cl = st.mutable_current_limit();
    cl->set_requests_per_unit(rpu);
    cl->set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(unit));
    if (!l.name.empty()) cl->set_name(l.name);
  }

  // `outcomes`: the call's requests' (null when it made none).
  void answer(RlsCall& c, const Outcome* outcomes) {
    rls::RateLimitResponse& resp = c.response;
    const int64_t now_s = svc_.clock->now_ns() / 1'000'000'000;
    int failed = 0, quota_total = 0, quota_failed = 0;
    const rls::RateLimitResponse::DescriptorStatus* nearest = nullptr;
    uint32_t nearest_remaining = std::numeric_limits<uint32_t>::max();
    for (RlsCall::Item& it : c.items) {
      auto& st = *resp.add_statuses();
      st.set_code(rls::RateLimitResponse::OK);
      if (it.unlimited) {
        st.set_limit_remaining(std::numeric_limits<uint32_t>::max());
        continue;
      }
      if (!it.limit) continue;
      const RlsLimit& l = *it.limit;
      bool over = false;
      uint32_t rpu = l.requests_per_unit;
      RlsUnit unit = l.unit;
      int64_t reset_s = 0;
      if (it.zero_limit) {
        over = true;
        if (it.stats) count(*it.stats, 0, 0, it.hits, it.hits, true, l.shadow);
        reset_s = rls_unit_seconds(unit) - now_s % rls_unit_seconds(unit);
      } else {
        const Outcome& o = outcomes[it.job];
        if (!o.ok()) {
          rules_.stats().unavailable.fetch_add(
              o.code == Code::kTryAgain || o.code == Code::kClusterDown ? 1 : 0,
              std::memory_order_relaxed);
          return c.fail(status_of(o));
        }
        const Decision& d = o.decision;
        if (!l.policy.empty()) {
          rpu = static_cast<uint32_t>(std::clamp<int64_t>(d.limit, 0, UINT32_MAX));
          unit = unit_of_period(it.spec.c);
          reset_s = (d.reset_after_ns + 999'999'999) / 1'000'000'000;
        } else {
          const int64_t us = rls_unit_seconds(unit);
          reset_s = us - now_s % us;
        }
        if (o.unavailable == FailMode::kOpen) {
          set_limit(st, l, rpu, unit);
          st.mutable_duration_until_reset()->set_seconds(reset_s);
          continue;
        }
        over = !d.allowed || o.shadow_denied;
        const int64_t limit = d.limit;
        const int64_t after = std::max<int64_t>(0, limit - d.remaining);
        const int64_t before = std::max<int64_t>(0, after - static_cast<int64_t>(it.hits));
        if (it.stats) {
          count(*it.stats, static_cast<uint64_t>(limit), static_cast<uint64_t>(before),
                static_cast<uint64_t>(after), it.hits, over, l.shadow || it.spec.shadow);
        }
        st.set_limit_remaining(
            static_cast<uint32_t>(std::clamp<int64_t>(d.remaining, 0, UINT32_MAX)));
      }
      set_limit(st, l, rpu, unit);
      st.mutable_duration_until_reset()->set_seconds(reset_s);
      const bool shadow = l.shadow || it.spec.shadow;
      if (over && !shadow) st.set_code(rls::RateLimitResponse::OVER_LIMIT);
      if (l.quota) ++quota_total;
      if (st.code() == rls::RateLimitResponse::OVER_LIMIT) {
        if (l.quota) {
          ++quota_failed;
        } else {
          ++failed;
          nearest = &st;
          nearest_remaining = 0;
        }
      } else if (st.limit_remaining() < nearest_remaining) {
        nearest = &st;
        nearest_remaining = st.limit_remaining();
      }
    }
    const bool over = failed > 0 || (quota_total > 0 && quota_total == quota_failed);
    resp.set_overall_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    (over ? rules_.stats().over_limit : rules_.stats().ok).fetch_add(1, std::memory_order_relaxed);
    if (options_.response_headers && nearest) {
      auto add = [&](const char* name, uint64_t v) {
        auto* h = resp.add_response_headers_to_add();
        h->set_key(name);
        h->set_value(std::to_string(v));
      };
      add("RateLimit-Limit", nearest->current_limit().requests_per_unit());
      add("RateLimit-Remaining", nearest->limit_remaining());
      add("RateLimit-Reset", static_cast<uint64_t>(nearest->duration_until_reset().seconds()));
    }
    grpc::ByteBuffer out;
    bool own = false;
    grpc::Status st =
        grpc::SerializationTraits<rls::RateLimitResponse>::Serialize(resp, &out, &own);
    if (!st.ok()) return c.fail(st);
    c.finish(out);
  }

  static grpc::Status status_of(const Outcome& o) {
    const std::string text(o.error);
    switch (o.code) {
      case Code::kTryAgain:
      case Code::kClusterDown:
      case Code::kNotReplicated:
        return {grpc::StatusCode::UNAVAILABLE, text};
      case Code::kWrongType:
        return {grpc::StatusCode::FAILED_PRECONDITION, text};
      case Code::kKeyLimit:
        return {grpc::StatusCode::RESOURCE_EXHAUSTED, text};
      default:
        if (text.rfind("NOPERM", 0) == 0) return {grpc::StatusCode::PERMISSION_DENIED, text};
        return {grpc::StatusCode::INTERNAL, text};
    }
  }

  Services& svc_;
  RlsRules& rules_;
  const RlsDoorOptions& options_;
  // The queue's thread's (there is one queue):
  std::shared_ptr<const AclUser> user_;
  uint64_t user_version_ = 0;
  std::shared_ptr<const RlsConfig> cfg_;
  uint64_t cfg_version_ = 0;
  std::vector<RlsEntry> entries_;
  std::vector<std::string_view> replaced_;
  std::vector<std::string_view> acl_words_;
  std::atomic<int64_t> in_flight_{0};  // calls taken and not yet finished
  int awaiting_ = 0;
};

class RlsDoor::HealthService final : public grpc::health::v1::Health::AsyncService {};

RlsDoor::RlsDoor(Services& svc, RlsRules& rules, RlsDoorOptions options)
    : svc_(svc), rules_(rules), options_(std::move(options)) {}

RlsDoor::~RlsDoor() { stop(); }

Status RlsDoor::start(const std::string& host, int port) {
  // gRPC's mutexes (Abseil's) look for lock-order cycles on every lock by default: a cost
  // per call for a check meant for debugging.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  service_ = std::make_unique<Service>(svc_, rules_, options_);
  health_ = std::make_unique<HealthService>();
  // (the door's own Check, on its queue: gRPC's built-in one would start threads of its own
  // that take the connections' reads over, a hand-over per call)
  grpc::EnableDefaultHealthCheckService(false);
  grpc::ServerBuilder b;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options_.cert_pem.empty()) {
    using C = RlsDoorOptions::ClientCerts;
    grpc::SslServerCredentialsOptions o(
        options_.client_certs == C::kRequired
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
        : options_.client_certs == C::kOptional ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
                                                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    o.pem_root_certs = options_.ca_pem;
    o.pem_key_cert_pairs.push_back({options_.key_pem, options_.cert_pem});
    creds = grpc::SslServerCredentials(o);
  }
  const std::string addr =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  b.AddListeningPort(addr, creds, &port_);
  b.RegisterService(service_.get());
  b.RegisterService(health_.get());
  b.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_streams);
  grpc::ResourceQuota quota("rls-door");
  quota.Resize(static_cast<size_t>(options_.memory_bytes));
  b.SetResourceQuota(quota);
  for (int i = 0; i < kQueues; ++i) queues_.push_back(b.AddCompletionQueue());
  server_ = b.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    for (auto& q : queues_) q->Shutdown();
    queues_.clear();
    return Error{"cannot listen on " + addr};
  }
  set_serving(false);
  for (auto& q : queues_) {
    // (a few calls awaited at once, so a burst of new streams is taken without a wait)
    for (int i = 0; i < kArmed; ++i) service_->arm(q.get());
    arm_health(q.get());
    threads_.emplace_back([this, cq = q.get()] { serve(cq); });
  }
  return {};
}

// A queue's thread is also the I/O lane its calls' requests run on: its own event loop and
// flight batcher, polled between the queue's events. The requests of the calls the queue
// had ready together join one flight, whose shards run in place here when idle — no
// hand-over to another thread, and the answers are sent from here. While a flight is out
// (a forward to another node, a busy shard, a slot's state awaited) the loop looks at its
// event loop every 100 µs as well.
void RlsDoor::serve(grpc::ServerCompletionQueue* cq) {
  asio::io_context io;
  IoBatcher batcher(io, svc_, svc_.settings.max_batch_commands * 4);  // (as an I/O thread's)
  Lane lane{&io, &batcher};
  void* tag = nullptr;
  bool ok = false;
  std::vector<std::shared_ptr<RlsCall>> batch;
  auto take = [&] {
    auto* t = static_cast<DoorTag*>(tag);
    if (t->health) return health(static_cast<HealthCall*>(t), ok, cq);
    auto* c = static_cast<RlsCall*>(t);
    if (!ok || c->finishing) return service_->done(*c);
    service_->arm(cq);
    service_->handle(*c, batch);
  };
  for (;;) {
    bool got = false;
    if (service_->awaiting() > 0) {
      const auto st = cq->AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kLanePoll);
      if (st == grpc::CompletionQueue::SHUTDOWN) break;
      got = st == grpc::CompletionQueue::GOT_EVENT;
    } else {
      if (!cq->Next(&tag, &ok)) break;
      got = true;
    }
    if (got) {
      IoBatcher::Turn turn(batcher);  // (the flight leaves when it closes, in place)
      take();
      // (and whatever else is ready now, without waiting)
      while (batch.size() < kBatchCalls &&
             cq->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) ==
                 grpc::CompletionQueue::GOT_EVENT) {
        take();
      }
      service_->submit(batch, lane);
    }
    io.restart();
    io.poll();
  }
}

void RlsDoor::set_serving(bool serving) { serving_.store(serving, std::memory_order_relaxed); }

void RlsDoor::arm_health(grpc::ServerCompletionQueue* cq) {
  auto* h = new HealthCall;
  health_->RequestCheck(&h->ctx, &h->request, &h->responder, cq, cq, h);
}

// "" (the server as a whole) and the rate-limit service: SERVING or NOT_SERVING; any other
// name is unknown, as gRPC's own health service answers.
void RlsDoor::health(HealthCall* h, bool ok, grpc::ServerCompletionQueue* cq) {
  if (!ok || h->finishing) {
    delete h;
    return;
  }
  arm_health(cq);
  h->finishing = true;
  const std::string& name = h->request.service();
  if (!name.empty() && name != rls::RateLimitService::service_full_name()) {
    h->responder.FinishWithError({grpc::StatusCode::NOT_FOUND, "service name unknown"}, h);
    return;
  }
  grpc::health::v1::HealthCheckResponse r;
  r.set_status(serving_.load(std::memory_order_relaxed)
                   ? grpc::health::v1::HealthCheckResponse::SERVING
                   : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  h->responder.Finish(r, grpc::Status::OK, h);
}

void RlsDoor::stop() {
  if (!server_) return;
  set_serving(false);
  // New calls refused; those running get half a second, then are cancelled. Their request
  // jobs still answer (into cancelled calls): the queues are shut only once none is left, as
  // gRPC requires (bounded by the longest a job can wait: a forward's timeout, an awaited
  // slot).
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (service_->in_flight() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& q : queues_) q->Shutdown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  queues_.clear();
  server_.reset();
}

}  // namespace fg
