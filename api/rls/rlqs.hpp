// Envoy's rate-limit quota service (RLQS) without gRPC: a gateway's stream of usage reports
// turned into quota slices of the cluster's counters, and the slices into the assignments
// the gateway enforces locally (api/rls/README.md, "The quota service").
//
// A slice is taken from the bucket's counter — a take like any door's, routed to the key's
// owner — before it is handed out, so what a gateway admits from it is already counted: a
// gateway (or node) that dies holding one loses it, and nothing is given twice. Each bucket
// a stream reports gets a slice sized to its share (the counter's remaining capacity split
// between the bucket's holders here, or what the gateway asked for lately, whichever is
// less), as a token bucket that does not refill, for a period (rlqs slice period); then it
// is extended while it has tokens left, or replaced by the next one (at once when the
// gateway's reports say it is spent). A counter that has nothing left gets DENY_ALL
// (once the slice in force is spent) until it has. Requests a gateway
// reports beyond its slices (its no_assignment or expired_assignment fallback let them
// through) are charged to the counter. The door (rlqs_streams.cpp) is the transport; tests drive
// this directly.
#pragma once
#include <cstdint>
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

// One bucket of one stream: what it is drawn from and the slice it holds.
struct RlqsHolder {
  rlqs_pb::BucketId id;  // as the gateway named it (echoed in its actions)
  std::string key;       // the counter
  RlsLimit limit;        // the rule's (a policy, a fixed window, or unlimited)
  LimitSpec spec;        // resolved (a policy: at its last grant)
  bool unlimited = false;
  // The slice in force: its tokens (0: DENY_ALL, or none yet), its number, until when.
  int64_t slice = 0;
  uint64_t seq = 0;
  bool assigned = false;
  int64_t expires_ns = 0;
  int64_t due_ns = 0;  // when it gets its next slice
  // Tokens handed out in slices; requests the gateway reported allowed; of those, charged
  // beyond the slices. (reported - charged <= granted, once a report is settled.)
  int64_t granted = 0, reported = 0, charged = 0;
  // Of the slice in force: requests reported allowed since it was handed out; when it was
  // (a slice is extended, not replaced, while it has enough left, up to kMaxSliceLife);
  // the end of the window it was taken in (a window's slice never outlives it).
  int64_t spent = 0, sliced_at = 0, window_end = 0;
  bool renew = false;       // its limit changed: a new slice, not the old one extended
  double demand = -1;       // requests per second the gateway saw lately (-1: not yet known)
  bool waiting = false;     // a grant or charge of its is in flight
  bool abandon = false;     // to be abandoned (and forgotten) with the next answer
  uint64_t generation = 0;  // its key's holder count it was sized with (RlqsQuota::Key)
  uint64_t policy_version = 0, rules_version = 0;
  int64_t counted_at = -1;  // when it last took its lease among the counter's holders
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
  // A slice (a take), a charge of reported requests (FG.ADJUST), the holder's lease among
  // its counter's holders, cluster-wide (an acquire: their count sizes the shares), or a
  // counter forgotten to make room in its domain, reset (rls_keys.hpp).
  enum class What : uint8_t { kSlice, kCharge, kCount, kReset };
  struct Item {
    std::string bucket;  // the holder's canonical name
    std::string key;     // (the request's key views it)
    What what = What::kSlice;
    int64_t cost = 0;
  };
  std::vector<Item> items;
  std::vector<Request> requests;
  bool empty() const { return items.empty(); }
};

struct RlqsOptions {
  int64_t slice_ns = 1'000'000'000;  // how long a slice lasts (rlqs-slice-ms)
  std::string user = "default";      // rls-user
  // Counters one domain may have made here (rls-max-keys-per-domain: a bucket's values are
  // the gateway's to choose), and buckets all streams may hold at once.
  int64_t max_keys_per_domain = 100'000;
  int64_t max_buckets = 100'000;
  // The counters buckets made, shared by the door's threads (null: one of its own, of
  // max_keys_per_domain).
  std::shared_ptr<RlsKeys> keys;
};

// The holders of every stream a door thread serves, and the counters they draw on. One per
// thread (not shared).
class RlqsQuota {
 public:
  RlqsQuota(Services& svc, RlsRules& rules, RlqsOptions options);
  ~RlqsQuota();

  // A report: its usages noted, new buckets matched (an unknown one is answered with an
  // abandon in `out`). The first report names the domain; a report that is none, or has no
  // domain first, refuses the stream (the status it ends with).
  RlsStatus report(RlqsStream& s, std::string_view bytes, int64_t now_ns,
                   rlqs_pb::RateLimitQuotaResponse& out);
  // The grants and charges the stream's holders need now (they are marked waiting).
  void due(RlqsStream& s, int64_t now_ns, RlqsWork& work, rlqs_pb::RateLimitQuotaResponse& out);
  // Their outcomes into assignments (or abandons) in `out`.
  void settle(RlqsStream& s, RlqsWork& work, const Outcome* outcomes, int64_t now_ns,
              rlqs_pb::RateLimitQuotaResponse& out);
  // The stream is gone: its holders leave their counters' counts.
  void forget(RlqsStream& s);
  // Moves on whenever a bucket gets a new holder here (others' shares may shrink).
  uint64_t arrivals() const;
  // The earliest time any of `s`'s holders is due (INT64_MAX: none).
  static int64_t next_due(const RlqsStream& s);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Where the holders of `key` are counted, cluster-wide: a lease each, taken every period.
std::string rlqs_holders_key(std::string_view key);

// A slice's size: once the gateway's demand is known, what it asked for in a slice's time
// with room to grow (half as much again, and one); before, `first`. At most `share` — what
// one of the counter's holders may take at once — and the counter's `remaining` when known
// (-1: not); at least 1.
int64_t rlqs_slice_size(int64_t share, int64_t remaining, double demand_per_s, int64_t slice_ns,
                        int64_t first);

}  // namespace fg
