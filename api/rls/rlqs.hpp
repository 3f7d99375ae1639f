// Envoy's rate-limit quota service (RLQS) without gRPC: a gateway's stream of usage reports
// turned into assignments its filter enforces locally (api/rls/README.md, "The quota
// service").
//
// Each bucket a gateway reports holds a **share of its counter's rate**, assigned as a
// refilling token bucket: the gateways drawing on one counter split its rate between them by
// what they report they were asked for (their demand), so the shares sum to the limit's
// rate wherever the gateways stream to. The split is made from a table of every holder's
// demand kept cluster-wide beside the counter (a hash, `rlqs-demand:<counter>`, one field a
// holder, written and read every period by each holder; a holder's field goes stale three
// periods after its last write) — each holder computes the same split from it (water-
// filling: no holder gets more than it asks for, and a tenth, while another is short;
// what is left goes to all in proportion). A holder that reports asking for nothing gets
// almost nothing (one token a minute): holders are counted by what they spend, not by
// subscribing.
//
// What Envoy's filter does with an assignment is its code's, not the proto's comments
// (global_client_impl.cc): its time to live is armed in whole seconds; a token bucket is kept
// while max_tokens, tokens_per_fill and the fill interval's nanos are unchanged, and rebuilt
// at the old one's fill ratio otherwise; its rate is tokens_per_fill over the fill interval's
// whole seconds; reports go every 5 s. So every time to live here is whole seconds and
// outlives two reports (refreshed before it ends), a share changes the bucket only when it
// moved by more than a tenth, and rates are written as tokens per 10 s.
//
// What a gateway reports it admitted is charged to the counter (FG.ADJUST), so the other
// doors' clients of the same key see the gateways' use — each charge no more than the stream
// could have admitted in the time it reports (its share's rate over the time, its burst),
// and no more than one period's worth of the limit at once.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acl.hpp"
#include "envoy/service/rate_limit_quota/v3/rlqs.pb.h"
#include "floodgate/rlqs_wire.pb.h"
#include "request.hpp"
#include "rls_config.hpp"
#include "rls_keys.hpp"
#include "rls_translate.hpp"

namespace fg {

struct Services;

namespace rlqs_pb = envoy::service::rate_limit_quota::v3;

// Envoy's filter reports every this long (hard-coded in its filter_persistence.cc).
constexpr int64_t kEnvoyReportNs = 5'000'000'000;
// How long an assignment lives at the gateway (whole seconds: Envoy arms its timer with the
// seconds alone), refreshed when less than kRlqsRefreshNs of it is left.
constexpr int64_t kRlqsTtlSeconds = 15;
constexpr int64_t kRlqsRefreshNs = 10'000'000'000;

// What a gateway's bucket is assigned now.
struct RlqsAssigned {
  enum class Rule : uint8_t { kNone, kBucket, kAllowAll, kDenyAll } rule = Rule::kNone;
  // kBucket: max_tokens, and its rate as tokens per fill over a fill interval of whole
  // seconds (the rate Envoy's filter reads from it).
  int64_t max_tokens = 0, tokens_per_fill = 0, fill_seconds = 0;
  double rate() const {
    return fill_seconds > 0 ? static_cast<double>(tokens_per_fill) / fill_seconds : 0;
  }
  bool operator==(const RlqsAssigned& o) const {
    return rule == o.rule && max_tokens == o.max_tokens && tokens_per_fill == o.tokens_per_fill &&
           fill_seconds == o.fill_seconds;
  }
};

// One bucket of one stream: its counter, its share, what it reported.
struct RlqsHolder {
  rlqs_pb::BucketId id;  // as the gateway named it (echoed in its actions)
  std::string key;       // the counter
  RlsLimit limit;        // the rule's (a policy, a fixed window, or unlimited)
  LimitSpec spec;        // resolved (a policy: as last looked up)
  bool unlimited = false;
  uint64_t holder_id = 0;  // its field in the counter's demand table
  // Requests a second the gateway was asked for (allowed + denied over the time its reports
  // cover); -1 until a report covers some time.
  double demand = -1;
  RlqsAssigned assigned;       // in force at the gateway (as last sent)
  double share_rate = 0;       // its share of the counter's rate as last computed
  int64_t expires_ns = 0;      // when what was sent runs out at the gateway
  int64_t due_ns = 0;          // its next look (the demand table written and read)
  int64_t pending_charge = 0;  // reported admitted, not yet charged
  int64_t reported = 0, charged = 0;
  std::vector<std::string> stale;  // other holders' fields gone stale, to be deleted
  bool waiting = false;            // work of its is in flight
  uint64_t policy_version = 0, rules_version = 0;
};

// A stream: its domain (its first report's) and its buckets, by the BucketId's canonical
// text (entries sorted).
struct RlqsStream {
  std::string domain;
  std::string caller;  // the connection's peer: the counters its buckets make are its own
  std::map<std::string, RlqsHolder> holders;
};

// What a stream's due holders ask of the core, and where each answer goes.
struct RlqsWork {
  // The holder's demand written to its counter's table and the table read (three requests:
  // HSET, PEXPIRE, HGETALL), stale fields deleted (HDEL), reported admissions charged (FG.ADJUST),
  // or a counter forgotten to make room in its domain, reset (rls_keys.hpp).
  enum class What : uint8_t { kDemand, kPrune, kCharge, kReset };
  struct Item {
    std::string bucket;  // the holder's canonical name ("" for a reset)
    std::string key;     // (the requests' keys view it)
    What what = What::kDemand;
    int64_t cost = 0;
    size_t first = 0, count = 1;  // its requests
  };
  std::vector<Item> items;
  std::vector<Request> requests;
  std::deque<std::vector<std::string_view>> argvs;  // data requests' words (they stay put)
  std::deque<std::string> texts;
  bool empty() const { return items.empty(); }
  void clear() {
    items.clear();
    requests.clear();
    argvs.clear();
    texts.clear();
  }
};

struct RlqsOptions {
  // How often each holder writes its demand and reads its counter's table (rlqs-slice-ms).
  int64_t slice_ns = 1'000'000'000;
  std::string user = "default";  // rls-user
  // Counters one domain may have made here (rls-max-keys-per-domain: a bucket's values are
  // the gateway's to choose), and buckets all streams may hold at once.
  int64_t max_keys_per_domain = 100'000;
  int64_t max_buckets = 100'000;
  // The counters buckets made, shared by the door's threads (null: one of its own, of
  // max_keys_per_domain).
  std::shared_ptr<RlsKeys> keys;
  uint64_t seed = 0;  // holders' ids (0: from the clock)
};

// The holders of every stream a door thread serves. One per thread (not shared).
class RlqsQuota {
 public:
  RlqsQuota(Services& svc, RlsRules& rules, RlqsOptions options);
  ~RlqsQuota();

  // A report: its usages noted, new buckets matched (an unknown one is answered with an
  // abandon in `out`). The first report names the domain; a report that is none, or has no
  // domain first, refuses the stream (the status it ends with).
  RlsStatus report(RlqsStream& s, std::string_view bytes, int64_t now_ns,
                   rlqs_pb::RateLimitQuotaResponse& out);
  // The work the stream's holders need now (they are marked waiting), and the assignments
  // that need no work (refreshes, unlimited buckets) in `out`.
  void due(RlqsStream& s, int64_t now_ns, RlqsWork& work, rlqs_pb::RateLimitQuotaResponse& out);
  // The work's outcomes into assignments (or abandons) in `out`.
  void settle(RlqsStream& s, RlqsWork& work, const Outcome* outcomes, int64_t now_ns,
              rlqs_pb::RateLimitQuotaResponse& out);
  // The stream is gone: its holders leave their counters' tables (at their next look, or
  // stale).
  void forget(RlqsStream& s);
  // Moves on whenever a bucket gets a new holder here (every stream looks again).
  uint64_t arrivals() const;
  // The earliest time any of `s`'s holders is due (INT64_MAX: none).
  static int64_t next_due(const RlqsStream& s);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Where the holders of `key` write their demand: a hash, one field a holder.
std::string rlqs_demand_key(std::string_view key);

// One holder's share of `rate` (tokens a second) among holders asking `demands` (requests a
// second; -1: not yet known, counted as the known ones' mean), `mine` its index: water-
// filling — none gets more than it asks for, and a tenth, while another is short —
// then what is left to all in proportion to what they got. The shares of all sum to `rate`.
double rlqs_share(double rate, const std::vector<double>& demands, size_t mine);

// A rate (tokens a second) and a burst as Envoy's filter reads a token bucket: tokens per
// fill over a fill interval of whole seconds (10 s: a tenth of a token a second's precision;
// longer for rates under that, up to a minute), max_tokens at least 1.
RlqsAssigned rlqs_bucket(double rate, int64_t max_tokens);

}  // namespace fg
