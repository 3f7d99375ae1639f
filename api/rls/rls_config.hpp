// The gateway door's rules: envoyproxy/ratelimit's YAML configuration (domains, nested
// descriptors, rate limits), loaded and checked as that service loads and checks it, and
// the lookup that finds the limit for one request descriptor. No gRPC here: the door
// (grpc_session, grpc_calls) decodes requests and asks; FG.RLS CONFIG shows what is loaded.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "limit_spec.hpp"
#include "result.hpp"

namespace fg {

// Upstream's RateLimitResponse.RateLimit.Unit, with its numbers.
enum class RlsUnit : uint8_t {
  kUnknown = 0,
  kSecond = 1,
  kMinute = 2,
  kHour = 3,
  kDay = 4,
  kMonth = 5,
  kYear = 6,
  kWeek = 7,
};
// A unit's length in seconds as upstream counts it (a month is 30 days, a year 365); 0 for
// kUnknown.
int64_t rls_unit_seconds(RlsUnit u);
std::string_view rls_unit_name(RlsUnit u);  // "second" ... (lower case, as the YAML says it)
RlsUnit rls_unit_from_name(std::string_view name);  // any case; kUnknown when not a unit

// One descriptor's counters, as upstream names them. Kept across reloads (by name).
struct RlsStats {
  std::atomic<uint64_t> total_hits{0};
  std::atomic<uint64_t> over_limit{0};
  std::atomic<uint64_t> near_limit{0};
  std::atomic<uint64_t> within_limit{0};
  std::atomic<uint64_t> shadow_mode{0};
};

// Every descriptor's counters by domain and descriptor ("key_value.key2"), for /metrics. A
// detailed_metric descriptor names one per request value: past kMaxKeys keys the new ones
// are counted under their rule's own key instead, so no caller can grow it without bound.
class RlsStatsBook {
 public:
  static constexpr size_t kMaxKeys = 10'000;
  // The counters of `descriptor` in `domain`; `fallback` (may be null) once the book is full.
  RlsStats* get(std::string_view domain, std::string_view descriptor, RlsStats* fallback = nullptr);
  // Each domain and descriptor with its counters, in order.
  void each(const std::function<void(const std::string& domain, const std::string& descriptor,
                                     const RlsStats&)>& f) const;
  // Requests the door answered, by outcome, and configuration loads.
  std::atomic<uint64_t> ok{0}, over_limit{0}, unavailable{0}, invalid{0};
  std::atomic<uint64_t> domain_not_found{0};  // calls naming a domain no file has
  // The door's connections now, and what it refused: connections past rls-maxclients,
  // connections that did not begin in time, calls without the token, calls that needed
  // more counters than their domain may hold.
  std::atomic<int64_t> connections{0};
  std::atomic<uint64_t> connections_refused{0}, handshake_timeouts{0}, unauthenticated{0};
  // Connections closed for bytes that are no HTTP/2, or a flood nghttp2 stopped.
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> keys_refused{0};
  // Counters forgotten (and reset) to make room in a full domain (rls_keys.hpp).
  std::atomic<uint64_t> keys_evicted{0};
  // The quota service (RLQS): its streams now; reports read; slices handed out and their
  // tokens; DENY_ALL assignments; requests reported beyond the slices and charged; buckets
  // abandoned (not configured, refused, or no longer configured).
  std::atomic<int64_t> rlqs_streams{0};
  std::atomic<uint64_t> rlqs_reports{0}, rlqs_slices{0}, rlqs_slice_tokens{0}, rlqs_denials{0};
  std::atomic<uint64_t> rlqs_charged{0}, rlqs_abandoned{0};
  std::atomic<uint64_t> config_load_success{0}, config_load_error{0};

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<RlsStats>> stats_;
};

// A descriptor's `rate_limit` (or the caller's override, or a Floodgate policy).
struct RlsLimit {
  uint32_t requests_per_unit = 0;
  RlsUnit unit = RlsUnit::kUnknown;
  bool unlimited = false;
  std::string name;
  std::vector<std::string> replaces;
  bool shadow = false;
  bool quota = false;  // quota_mode: over only when every quota descriptor is over
  bool detailed_metric = false;
  // Extension: `policy: NAME` instead of a rate_limit — the named Floodgate policy's limit,
  // looked up when used (any rate kind: token bucket, GCRA, sliding log or window...).
  std::string policy;
  std::string full_key;       // "domain.key_value.key2": its metrics' name
  RlsStats* stats = nullptr;  // full_key's counters
};

// One level of a domain's descriptor tree.
struct RlsNode {
  std::map<std::string, std::unique_ptr<RlsNode>, std::less<>> children;  // "key" or "key_value"
  struct Wildcard {
    std::string key;                 // "key_val*ue": the child it leads to
    std::vector<std::string> parts;  // split on '*'
  };
  std::vector<Wildcard> wildcards;  // in the file's order
  std::unique_ptr<RlsLimit> limit;
  bool share_threshold = false;  // matched by wildcard: one counter for every value it matches
  bool value_to_metric = false;
  std::string pattern;  // share_threshold: "key_val*ue"
};

// RLQS (rlqs.cpp): which of the quota service's buckets a rule takes — the BucketId's
// entries, each value matched as a descriptor's (`*`: any run of characters) — the counter
// its quota is drawn from and the limit that counter keeps.
struct RlqsBucketRule {
  // The entries a BucketId must have, no more, by name; each value's parts split on '*'.
  std::vector<std::pair<std::string, std::vector<std::string>>> match;
  // The counter's key, "{entry}" standing for that entry's value; empty: the default,
  // "rlqs:<domain>_<entry>_<value>_..._" with the entries by name, then the limit's
  // ("policy:<name>", or the unit's seconds).
  std::string key;
  RlsLimit limit;    // a policy, a rate_limit (a fixed window), or unlimited
  std::string text;  // as FG.RLS CONFIG shows it
};

// What a domain does when a descriptor's counter cannot be reached (no live copy of its
// slot): an error (gRPC UNAVAILABLE: Envoy's failure_mode_deny decides), or allowed.
struct RlsDomain {
  RlsNode root;
  FailMode on_unavailable = FailMode::kError;
  std::vector<RlqsBucketRule> buckets;  // RLQS's, in the file's order
};

struct RlsEntry {
  std::string_view key, value;
};

// The limit one request descriptor gets, and the counter it draws on.
struct RlsMatch {
  const RlsLimit* limit = nullptr;  // null: nothing matched (OK, without current_limit)
  // Where its count lives: "domain_key_value_key2_value2_" (a share_threshold entry with
  // its pattern instead of its value), as upstream makes its cache key.
  std::string counter;
  RlsStats* stats = nullptr;  // a detailed_metric descriptor's own counters, else limit->stats
  // (match's working space: an RlsMatch matched into again allocates nothing new)
  std::vector<std::string_view> shared;
  std::string level_key;
};

class RlsConfig {
 public:
  std::map<std::string, RlsDomain, std::less<>> domains;
  std::vector<std::string> files;  // as loaded, in order

  // Upstream's lookup: each entry in turn, "key_value" first, then the wildcards of that
  // level, then "key" alone; the limit of the node the last entry reached, if any.
  RlsMatch match(std::string_view domain, const std::vector<RlsEntry>& entries,
                 RlsStatsBook& book) const;
  void match(std::string_view domain, const std::vector<RlsEntry>& entries, RlsStatsBook& book,
             RlsMatch& into) const;
  const RlsDomain* domain(std::string_view name) const;
  // RLQS: the first bucket rule of `domain` that `entries` (a BucketId's, any order) match,
  // and the key of its counter into `key`; null when none does.
  const RlqsBucketRule* match_bucket(std::string_view domain, std::vector<RlsEntry>& entries,
                                     std::string& key) const;
  // The rules as FG.RLS CONFIG shows them: one line per limit.
  std::vector<std::string> describe() const;
};

// Reads `path` (a YAML file, or a directory: its *.yaml and *.yml files, by name) into a
// config; or the first error, in upstream's words, prefixed with the file's name.
Result<std::shared_ptr<RlsConfig>> load_rls_config(const std::string& path, RlsStatsBook& book);
// One file's text (tests, and load_rls_config).
Status load_rls_yaml(RlsConfig& cfg, const std::string& name, const std::string& text,
                     RlsStatsBook& book);

// The rules in force: read by the door on every request, replaced whole by a reload (which
// keeps the last good config when the new one is refused).
class RlsRules {
 public:
  explicit RlsRules(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  std::shared_ptr<const RlsConfig> get() const { return std::atomic_load(&config_); }
  // Moves on with every good reload: a reader keeps its copy while it stays the same.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Reads the files again; on an error the config in force stays, and the error is kept.
  Status reload();
  // Whether the files changed since the last load (name, size or modification time).
  bool changed() const;
  std::string last_error() const;
  int64_t loaded_at_ms() const { return loaded_at_ms_.load(); }
  RlsStatsBook& stats() { return stats_; }

 private:
  std::string fingerprint() const;
  std::string path_;
  std::shared_ptr<const RlsConfig> config_ = std::make_shared<RlsConfig>();
  RlsStatsBook stats_;
  mutable std::mutex mu_;  // reloads, and what they leave behind
  std::string error_;
  std::string loaded_fingerprint_;
  std::atomic<int64_t> loaded_at_ms_{0};
  std::atomic<uint64_t> version_{1};
};

}  // namespace fg
