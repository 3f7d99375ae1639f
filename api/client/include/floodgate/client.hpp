// floodgate::Client — the native-protocol client library.
//
// One Client talks to a whole Floodgate cluster: it learns the topology from any seed,
// sends each request straight to the node that owns its key, batches and pipelines
// requests per connection, follows topology changes (pushed by the nodes) and retries
// across failover until the call's deadline. Every call has a callback form (the callback
// runs on the client's I/O thread: keep it short, never block in it) and a blocking form.
//
//   floodgate::Client::Options opt;
//   opt.seeds = {"127.0.0.1:7380"};
//   floodgate::Client fg(opt);
//   auto d = fg.take("api:user:42", floodgate::Limit::policy("free"));
//   if (d.ok() && !d->allowed) reply_429(d->retry_after_ms);
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace floodgate {

enum class Status {
  kOk,
  kError,          // the node refused the request (bad arguments, unknown policy, ...)
  kWrongType,      // the key holds another kind of limiter
  kUnavailable,    // no node could serve the key before the deadline (cluster down, failover)
  kTimeout,        // no answer before the deadline; the request may have been counted
  kNotReplicated,  // sync policy: counted on the owner, no replica acknowledged in time
  kKeyLimit,       // the node holds its maximum number of keys
  kNoAuth,         // the node needs a password (Options::password)
  kUnsupported,    // the node does not know this request (an older node)
  kNoPerm,         // the user (Options::user) may not run this, or not on this key
};

std::string_view status_name(Status s);

template <class T>
class Result {
 public:
  Result() = default;
  Result(T v) : value_(std::move(v)) {}  // NOLINT: a value is a success
  Result(Status s, std::string error) : status_(s), error_(std::move(error)) {}
  bool ok() const { return status_ == Status::kOk; }
  explicit operator bool() const { return ok(); }
  Status status() const { return status_; }
  const std::string& error() const { return error_; }  // Redis-worded text from the node
  const T& value() const { return value_; }
  T& value() { return value_; }
  const T* operator->() const { return &value_; }
  const T& operator*() const { return value_; }

 private:
  Status status_ = Status::kOk;
  std::string error_;
  T value_{};
};

// A limit: a policy named in the nodes' config, or an inline one. Durations in ms.
struct Limit {
  enum class Kind {
    kPolicy,
    kTokenBucket,
    kGcra,
    kFixedWindow,
    kSlidingLog,
    kSlidingWindow,
    kConcurrency,
    kCalendarWindow = 12  // (the native protocol's numbers)
  };
  // A calendar window's period, from local midnight: an ISO week starts on Monday.
  enum class Period { kDay = 1, kWeek = 2, kMonth = 3, kYear = 4 };
  Kind kind = Kind::kPolicy;
  std::string name;  // kPolicy
  int64_t a = 0, b = 0, period_ms = 0;
  std::string time_zone;  // kCalendarWindow: a tz database name ("Europe/Berlin"); "" = UTC

  static Limit policy(std::string name) { return {Kind::kPolicy, std::move(name), 0, 0, 0, {}}; }
  static Limit token_bucket(int64_t capacity, int64_t refill, int64_t period_ms) {
    return {Kind::kTokenBucket, {}, capacity, refill, period_ms, {}};
  }
  static Limit gcra(int64_t max_burst, int64_t count, int64_t period_ms) {
    return {Kind::kGcra, {}, max_burst, count, period_ms, {}};
  }
  static Limit fixed_window(int64_t limit, int64_t window_ms) {
    return {Kind::kFixedWindow, {}, limit, 0, window_ms, {}};
  }
  static Limit sliding_log(int64_t limit, int64_t window_ms) {
    return {Kind::kSlidingLog, {}, limit, 0, window_ms, {}};
  }
  static Limit sliding_window(int64_t limit, int64_t window_ms) {
    return {Kind::kSlidingWindow, {}, limit, 0, window_ms, {}};
  }
  static Limit concurrency(int64_t limit, int64_t ttl_ms) {
    return {Kind::kConcurrency, {}, limit, 0, ttl_ms, {}};
  }
  // `limit` per day, week, month or year of the zone's calendar (FG.TAKE's calendar_window).
  static Limit calendar_window(int64_t limit, Period period, std::string time_zone = "UTC") {
    return {Kind::kCalendarWindow,        {}, limit,
            static_cast<int64_t>(period), 0,  std::move(time_zone)};
  }
};

// A rate-limit answer: enough for 429 + Retry-After and the RateLimit-* headers.
struct Decision {
  bool allowed = false;
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t retry_after_ms = -1;  // -1 when allowed, or when the cost can never fit
  int64_t reset_after_ms = 0;   // until the limiter is full again
  // Set when the node could not reach the key's state and the policy's on_unavailable
  // decided: "fail_open" or "fail_closed".
  std::string unavailable;
};

struct Lease {
  bool granted = false;
  std::string key;
  uint64_t id = 0;  // 0 when not granted
  int64_t held = 0;
  int64_t limit = 0;
  int64_t retry_after_ms = -1;  // when denied: until the soonest lease expires
};

// One limit of an all-or-nothing check.
struct Check {
  std::string key;
  Limit limit;
  int64_t cost = 1;
};

struct MultiDecision {
  bool allowed = false;             // every check allowed, and all of them were counted
  std::vector<Decision> decisions;  // one per check, in order
  int64_t retry_after_ms = -1;      // when denied: the longest wait among the denials
};

struct TopologyNode {
  std::string id, host;
  int port = 0;  // native
  int resp_port = 0;
  std::string state;  // alive, suspect, dead, left
  bool in_table = false;
};
struct TopologyRange {
  int first = 0, last = 0;
  int owner = 0;
  std::vector<int> replicas;
};
struct Topology {
  bool cluster = false;
  uint64_t epoch = 0;
  bool quorum = true;
  std::vector<TopologyNode> nodes;
  std::vector<TopologyRange> ranges;
};

template <class T>
using Callback = std::function<void(Result<T>)>;

class Client {
 public:
  struct Options {
    std::vector<std::string> seeds{"127.0.0.1:7380"};  // native ports, host:port
    std::chrono::milliseconds deadline{2000};          // per call, retries across failover included
    int connections_per_node = 1;
    size_t max_batch = 1024;          // requests per frame at most
    size_t max_frames_in_flight = 4;  // per connection (pipelining)
    std::string user;                 // the ACL user; empty: "default"
    std::string password;             // the user's password (for "default": the nodes' requirepass)
    std::string name = "floodgate-client";
    // TLS, for nodes whose native port speaks it (tls-native). The nodes' certificates are
    // checked against `ca_cert_file` and must name the address connected to (its IP or
    // host name) unless `verify_host` is off; `cert_file`/`key_file` are this client's own
    // certificate, for nodes with tls-auth-clients yes. A file that cannot be used makes
    // the constructor throw std::runtime_error saying which and why.
    struct Tls {
      bool enabled = false;
      std::string ca_cert_file;
      std::string cert_file;
      std::string key_file;
      bool verify_host = true;
    } tls;
    // All-or-nothing checks: how long a reservation holds if this process dies midway.
    std::chrono::milliseconds reservation_ttl{5000};
  };

  explicit Client(Options options);
  ~Client();  // waits for nothing: calls still open get kUnavailable
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // --- callback forms (the callback runs on the client's I/O thread) ---
  void take(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb);
  void take_waiting(std::string_view key, const Limit& limit, std::chrono::milliseconds wait,
                    int64_t cost, Callback<Decision> cb);
  void peek(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb);
  // A cost known only after the request (tokens, bytes, rows): `delta` > 0 charges it, into
  // debt if need be (later requests wait until it is repaid), < 0 refunds it. The decision
  // is the limit's state after, as a peek of 1 sees it (remaining below zero: in debt).
  void adjust(std::string_view key, const Limit& limit, int64_t delta, Callback<Decision> cb);
  void reset(std::string_view key, Callback<bool> cb);
  // holder: empty = a lease of its own (renew it, or let it expire).
  void acquire(std::string_view key, const Limit& limit, std::string_view holder,
               Callback<Lease> cb);
  void renew(std::string_view key, uint64_t lease, int64_t ttl_ms, Callback<bool> cb);
  void release(std::string_view key, uint64_t lease, Callback<bool> cb);
  void count(std::string_view key, Callback<int64_t> cb);
  // Over every node: how many of the holder's leases were renewed / released.
  void heartbeat(std::string_view holder, int64_t ttl_ms, Callback<int64_t> cb);
  void release_all(std::string_view holder, Callback<int64_t> cb);
  // All or nothing: admits only if every check allows, and then counts every one; when
  // any denies (or fails), nothing stays consumed. See api/NATIVE.md for the guarantee.
  void check_all(std::vector<Check> checks, Callback<MultiDecision> cb);
  void topology(Callback<Topology> cb);

  // --- blocking forms ---
  Result<Decision> take(std::string_view key, const Limit& limit, int64_t cost = 1);
  // A take that waits up to `wait` (at most 60 s) for its admission instead of being denied
  // (FG.TAKE ... WAIT): allowed when it is due, its place kept in arrival order; denied at
  // once when it could not be admitted within `wait`. Token buckets and GCRA only.
  Result<Decision> take_waiting(std::string_view key, const Limit& limit,
                                std::chrono::milliseconds wait, int64_t cost = 1);
  Result<Decision> peek(std::string_view key, const Limit& limit, int64_t cost = 1);
  Result<Decision> adjust(std::string_view key, const Limit& limit, int64_t delta);
  Result<bool> reset(std::string_view key);
  Result<Lease> acquire(std::string_view key, const Limit& limit, std::string_view holder = {});
  Result<bool> renew(std::string_view key, uint64_t lease, int64_t ttl_ms);
  Result<bool> release(std::string_view key, uint64_t lease);
  Result<int64_t> count(std::string_view key);
  Result<int64_t> heartbeat(std::string_view holder, int64_t ttl_ms);
  Result<int64_t> release_all(std::string_view holder);
  Result<MultiDecision> check_all(std::vector<Check> checks);
  Result<Topology> topology();

  struct Stats {
    uint64_t requests = 0, frames = 0, retries = 0, redirects = 0, reconnects = 0;
  };
  Stats stats() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Keeps an application server's leases alive: acquires under one holder name, renews
// all of them from a background thread every ttl/3 (one FG.HEARTBEAT per node), and
// releases them all when destroyed. If the process dies, its permits come back within
// the TTL. One per application server.
class Holder {
 public:
  Holder(Client& client, std::string holder_id, std::chrono::milliseconds ttl);
  ~Holder();  // stops renewing and releases every lease of this holder
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;

  // `limit`: a concurrency policy, or Limit::concurrency(n, ttl_ms) (use this Holder's ttl).
  Result<Lease> acquire(std::string_view key, const Limit& limit);
  void acquire(std::string_view key, const Limit& limit, Callback<Lease> cb);
  Result<bool> release(const Lease& lease);
  void release(const Lease& lease, Callback<bool> cb);
  const std::string& id() const { return id_; }
  // Heartbeats sent that failed (a node down): the leases stay until their TTL.
  uint64_t failed_heartbeats() const;

 private:
  struct State;
  Client& client_;
  std::string id_;
  std::shared_ptr<State> state_;
};

}  // namespace floodgate
