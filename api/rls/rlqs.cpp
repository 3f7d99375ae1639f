#include "rlqs.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "command_table.hpp"
#include "key_table.hpp"
#include "services.hpp"

namespace fg {

namespace {

using Usage = rlqs_pb::RateLimitQuotaUsageReports::BucketQuotaUsage;
using Action = rlqs_pb::RateLimitQuotaResponse::BucketAction;
using Strategy = envoy::type::v3::RateLimitStrategy;

// Bounds on what one gateway's stream can make the node hold.
constexpr size_t kMaxBucketsPerStream = 1024;
constexpr int kMaxEntries = 64;
constexpr size_t kMaxBucketIdBytes = 4096;  // its entries' names and values
// A holder's field in its counter's demand table goes stale this many periods after it was
// last written (its holder gone, or its node).
constexpr int64_t kStalePeriods = 3;
// How soon a look the cluster could not answer is tried again.
constexpr int64_t kRetryNs = 250'000'000;
// A share moves the gateway's bucket (Envoy rebuilds it) only when it moved by more than this
// part of it: small moves would only churn buckets.
constexpr double kShareSlack = 0.1;
// A window's burst: what a gateway may admit at once on top of its rate, its rate over this
// long (at least one token). Over any window W of the limit the gateways admit at most the
// limit and their bursts (api/rls/README.md, "The bound").
constexpr double kWindowBurstS = 0.1;
// The least a holder gets (one token a minute): one asking for nothing gets almost nothing.
constexpr double kLeastRate = 1.0 / 60;
// What a holder asks for, on top of its demand, while others are short (a tenth: demand
// moves between reports).
constexpr double kHeadroom = 1.1;

bool sliceable(Kind k) {
  // Not a sliding log: it keeps each admission's own time, which a gateway's bucket cannot
  // give it — its exactness is the point of that kind.
  return k == Kind::kTokenBucket || k == Kind::kGcra || k == Kind::kFixedWindow ||
         k == Kind::kSlidingWindow || k == Kind::kCalendarWindow;
}
bool window_kind(Kind k) {
  return k == Kind::kFixedWindow || k == Kind::kCalendarWindow || k == Kind::kSlidingWindow;
}

// What a counter allows at most at once, and per second on average.
int64_t capacity_of(const LimitSpec& s) {
  return s.kind == Kind::kGcra ? s.a + 1 : std::max<int64_t>(1, s.a);
}
double rate_of(const LimitSpec& s) {
  const double per = s.c > 0 ? static_cast<double>(s.c) / 1e9 : 1.0;
  const double n = (s.kind == Kind::kTokenBucket || s.kind == Kind::kGcra) ? s.b : s.a;
  return n / per;
}

// Whether `bytes` (one element of bucket_quota_usages) is a map entry — field 1 a varint,
// the bucket id's hash — rather than a BucketQuotaUsage, whose field 1 is its BucketId.
bool map_entry(std::string_view bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  const uint32_t tag = in.ReadTag();
  using W = google::protobuf::internal::WireFormatLite;
  return W::GetTagFieldNumber(tag) == 1 && W::GetTagWireType(tag) == W::WIRETYPE_VARINT;
}

// One element into a usage, whichever encoding it is in; false when it is neither.
bool decode_usage(std::string_view bytes, Usage& u, floodgate::rlqs::UsageMapEntry& entry) {
  if (!map_entry(bytes)) {
    if (!u.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
    if (u.has_bucket_id()) return true;
    // (a map entry whose key is 0 has no field 1 on the wire: its field 2 is the usage)
  }
  if (!entry.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  u = std::move(*entry.mutable_value());
  return true;
}

// A BucketId's canonical name: its entries by name, each "name\0value\0".
std::string canonical(const rlqs_pb::BucketId& id, std::vector<RlsEntry>& entries) {
  entries.clear();
  for (const auto& [k, v] : id.bucket()) entries.push_back({k, v});
  std::sort(entries.begin(), entries.end(),
            [](const RlsEntry& x, const RlsEntry& y) { return x.key < y.key; });
  std::string name;
  for (const RlsEntry& e : entries) {
    name.append(e.key).push_back('\0');
    name.append(e.value).push_back('\0');
  }
  return name;
}

// A holder's field in the demand table: "<requests a second>:<until, Unix ms>".
std::string demand_value(double demand, int64_t until_ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f:%lld", demand, static_cast<long long>(until_ms));
  return buf;
}
bool parse_demand(std::string_view v, double& demand, int64_t& until_ms) {
  const size_t colon = v.find(':');
  if (colon == std::string_view::npos) return false;
  try {
    demand = std::stod(std::string(v.substr(0, colon)));
    until_ms = std::stoll(std::string(v.substr(colon + 1)));
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace

std::string rlqs_demand_key(std::string_view key) { return "rlqs-demand:" + std::string(key); }

double rlqs_share(double rate, const std::vector<double>& demands, size_t mine) {
  const size_t n = demands.size();
  if (n == 0 || mine >= n || rate <= 0) return 0;
  // Unknown demands count as the known ones' mean (or all alike when none is known).
  double known = 0;
  size_t nknown = 0;
  for (double d : demands) {
    if (d >= 0) {
      known += d;
      ++nknown;
    }
  }
  const double mean = nknown ? known / static_cast<double>(nknown) : 1.0;
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = (demands[i] >= 0 ? demands[i] : mean) * kHeadroom;
  // Water-filling in ascending order of what each asks: each gets what it asks for or its
  // even part of what is left, whichever is less.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return want[a] < want[b] || (want[a] == want[b] && a < b); });
  std::vector<double> got(n, 0);
  double left = rate;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    got[i] = std::min(want[i], left / static_cast<double>(n - k));
    left -= got[i];
  }
  // What nobody asked for goes to all in proportion to what they got (all alike if nothing).
  const double total = rate - left;
  if (left > 0) {
    for (double& g : got) g += total > 0 ? left * g / total : left / static_cast<double>(n);
  }
  return got[mine];
}

RlqsAssigned rlqs_bucket(double rate, int64_t max_tokens) {
  RlqsAssigned a;
  a.rule = RlqsAssigned::Rule::kBucket;
  a.max_tokens = std::clamp<int64_t>(max_tokens, 1, UINT32_MAX);
  rate = std::max(rate, kLeastRate);
  if (rate >= 0.1) {
    // Tokens per 10 s (rounded down: the shares' sum stays within the limit's rate).
    a.fill_seconds = 10;
    a.tokens_per_fill =
        std::clamp<int64_t>(static_cast<int64_t>(std::floor(rate * 10 + 1e-6)), 1, UINT32_MAX);
  } else {
    a.tokens_per_fill = 1;
    a.fill_seconds = std::min<int64_t>(60, static_cast<int64_t>(std::ceil(1 / rate)));
  }
  return a;
}

class RlqsQuota::Impl {
 public:
  Impl(Services& svc, RlsRules& rules, RlqsOptions options)
      : svc_(svc),
        rules_(rules),
        options_(std::move(options)),
        made_(options_.keys
                  ? options_.keys
                  : std::make_shared<RlsKeys>(static_cast<size_t>(options_.max_keys_per_domain))),
        next_id_(options_.seed ? options_.seed
                               : static_cast<uint64_t>(
                                     std::chrono::steady_clock::now().time_since_epoch().count())) {
  }

  void refresh() {
    if (!user_ || user_version_ != svc_.acl->version()) {
      user_version_ = svc_.acl->version();
      user_ = svc_.acl->find(options_.user);
    }
    if (!cfg_ || cfg_version_ != rules_.version()) {
      cfg_version_ = rules_.version();
      cfg_ = rules_.get();
    }
    svc_.policies->refresh(policies_, policy_version_);
  }

  RlsStatus report(RlqsStream& s, std::string_view bytes, int64_t now_ns,
                   rlqs_pb::RateLimitQuotaResponse& out) {
    auto& stats = rules_.stats();
    stats.rlqs_reports.fetch_add(1, std::memory_order_relaxed);
    if (!wire_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return {RlsStatusCode::kInvalidArgument, "the message is not a RateLimitQuotaUsageReports"};
    }
    if (s.domain.empty()) {
      if (wire_.domain().empty()) {
        return {RlsStatusCode::kInvalidArgument,
                "the first RateLimitQuotaUsageReports must name its domain"};
      }
      s.domain = wire_.domain();
    }
    refresh();
    if (!user_ || !user_->enabled()) {
      return {RlsStatusCode::kPermissionDenied,
              "the rls-user '" + options_.user + "' does not exist or is disabled"};
    }
    for (const std::string& element : wire_.bucket_quota_usages()) {
      if (!decode_usage(element, usage_, entry_) || !usage_.has_bucket_id() ||
          usage_.bucket_id().bucket().empty()) {
        return {RlsStatusCode::kInvalidArgument, "a bucket_quota_usages entry has no bucket_id"};
      }
      if (usage_.bucket_id().bucket_size() > kMaxEntries) {
        return {RlsStatusCode::kInvalidArgument,
                "a bucket_id has more than " + std::to_string(kMaxEntries) + " entries"};
      }
      size_t id_bytes = 0;
      for (const auto& [k, v] : usage_.bucket_id().bucket()) id_bytes += k.size() + v.size();
      if (id_bytes > kMaxBucketIdBytes) {
        // (every action the node answers echoes the id: a large one costs it each time)
        return {RlsStatusCode::kInvalidArgument,
                "a bucket_id holds more than " + std::to_string(kMaxBucketIdBytes) + " bytes"};
      }
      std::string name = canonical(usage_.bucket_id(), entries_);
      auto it = s.holders.find(name);
      if (it == s.holders.end()) {  // (its subscription)
        if (s.holders.size() >= kMaxBucketsPerStream) {
          return {
              RlsStatusCode::kResourceExhausted,
              "a stream may report at most " + std::to_string(kMaxBucketsPerStream) + " buckets"};
        }
        if (holders_ >= options_.max_buckets) {
          return {RlsStatusCode::kResourceExhausted,
                  "this node serves the most quota buckets it may (" +
                      std::to_string(options_.max_buckets) + "): try another node"};
        }
        RlqsHolder h;
        h.id = usage_.bucket_id();
        if (!place(s, h, now_ns)) {
          abandon(h, out);
          continue;
        }
        h.holder_id = next_holder_id();
        it = s.holders.emplace(std::move(name), std::move(h)).first;
        ++arrivals_;
        ++holders_;
      }
      note_usage(it->second, now_ns);
    }
    return {};
  }

  // A usage report of a bucket: what it was asked for (its demand), and what it admitted,
  // believed up to what it could have admitted in the time the report covers.
  void note_usage(RlqsHolder& h, int64_t now_ns) {
    const auto clamp_count = [](uint64_t v) {
      return static_cast<int64_t>(std::min<uint64_t>(v, static_cast<uint64_t>(kMaxCount)));
    };
    const int64_t allowed = clamp_count(usage_.num_requests_allowed());
    const int64_t denied = clamp_count(usage_.num_requests_denied());
    const double elapsed =
        static_cast<double>(usage_.time_elapsed().seconds()) + usage_.time_elapsed().nanos() / 1e9;
    if (elapsed > 0) {
      const double seen = static_cast<double>(allowed + denied) / elapsed;
      const double before = h.demand;
      h.demand = before < 0 ? seen : (before + seen) / 2;
      // A demand that moved much is looked at now, not at the period's end.
      if (before < 0 || std::fabs(h.demand - before) > 0.25 * std::max(before, 1.0)) {
        h.due_ns = std::min(h.due_ns, now_ns);
      }
    }
    h.reported = std::min(h.reported + allowed, kMaxCount);
    h.pending_charge =
        std::min(h.pending_charge + std::min(allowed, credible(h, elapsed)), kMaxCount);
  }

  // What a holder could have admitted over `elapsed` seconds (at least one): its bucket's
  // rate and burst, or — unassigned, or ALLOW_ALL — the limit's own rate and capacity (the
  // gateway's no-assignment rule lets everything through; it is believed up to that).
  static int64_t credible(const RlqsHolder& h, double elapsed) {
    const double t = std::max(elapsed, 1.0);
    double n = 0;
    switch (h.assigned.rule) {
      case RlqsAssigned::Rule::kBucket:
        n = h.assigned.rate() * t + static_cast<double>(h.assigned.max_tokens);
        break;
      case RlqsAssigned::Rule::kDenyAll:
        n = 1;  // (one request it may have let through before the rule arrived)
        break;
      case RlqsAssigned::Rule::kNone:
      case RlqsAssigned::Rule::kAllowAll:
        n = rate_of(h.spec) * t + static_cast<double>(capacity_of(h.spec));
        break;
    }
    return n >= static_cast<double>(kMaxCount) ? kMaxCount : static_cast<int64_t>(std::ceil(n)) + 1;
  }

  uint64_t next_holder_id() {
    uint64_t z = (next_id_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // A new holder's rule, key and limit; false when it gets none (abandoned).
  bool place(RlqsStream& s, RlqsHolder& h, int64_t now_ns) {
    if (!cfg_) return false;
    if (h.id.bucket_size() == 0) return false;
    canonical(h.id, entries_);
    const RlqsBucketRule* rule = cfg_->match_bucket(s.domain, entries_, key_);
    if (!rule) return false;
    if (key_.empty() || key_.size() > kMaxKeyLen) {
      spdlog::warn("quota service: bucket {} of domain {} makes a key of {} bytes; abandoned",
                   rule->text, s.domain, key_.size());
      return false;
    }
    if (!user_->unrestricted() && !acl_allows(key_)) return false;
    h.key = key_;
    h.limit = rule->limit;
    h.unlimited = rule->limit.unlimited;
    h.rules_version = cfg_version_;
    if (!h.unlimited && !resolve(h)) return false;
    if (!h.unlimited) {
      // A counter of its domain (the values are the gateway's to choose): a full domain makes
      // room by forgetting its heaviest caller's oldest (rls_keys.hpp).
      std::string why;
      const size_t before = evicted_.size();
      if (!made_->note(s.domain, s.caller, {{h.key, life_of(h)}}, now_ns, evicted_, why)) {
        rules_.stats().keys_refused.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("quota service: domain {}: {}; the bucket is abandoned", s.domain, why);
        return false;
      }
      rules_.stats().keys_evicted.fetch_add(evicted_.size() - before, std::memory_order_relaxed);
    }
    h.due_ns = now_ns;
    return true;
  }

  // Its counter is used: the most recently used of its caller's again, or made again if a
  // full domain forgot it meanwhile (and reset it), so the bookkeeping holds every counter a
  // bucket draws on.
  void note_use(const RlqsStream& s, const RlqsHolder& h, int64_t now_ns) {
    std::string why;
    const size_t before = evicted_.size();
    made_->note(s.domain, s.caller, {{h.key, life_of(h)}}, now_ns, evicted_, why);
    rules_.stats().keys_evicted.fetch_add(evicted_.size() - before, std::memory_order_relaxed);
  }
  static int64_t life_of(const RlqsHolder& h) {
    constexpr int64_t kSecondNs = 1'000'000'000;
    return std::clamp<int64_t>(h.spec.c, kSecondNs, int64_t{366} * 86400 * kSecondNs);
  }

  // The holder's limit as a spec (a policy's looked up now); false when it cannot be shared.
  bool resolve(RlqsHolder& h) {
    h.policy_version = policy_version_;
    if (h.limit.policy.empty()) {
      h.spec = LimitSpec::window(Kind::kFixedWindow, h.limit.requests_per_unit,
                                 rls_unit_seconds(h.limit.unit) * 1'000'000'000);
      return true;
    }
    auto spec = policies_->resolve(h.key, h.limit.policy);
    if (!spec.ok() || !sliceable(spec->kind) || spec->no_slices) {
      spdlog::warn("quota service: {}: policy '{}' {}; the bucket is abandoned", h.limit.full_key,
                   h.limit.policy,
                   !spec.ok()        ? std::string(spec.error())
                   : spec->no_slices ? std::string("says slices: off")
                                     : std::string("cannot be shared (a sliding log, a "
                                                   "concurrency limit)"));
      return false;
    }
    h.spec = *spec;
    return true;
  }

  bool acl_allows(std::string_view key) {
    const AclCatalog& catalog = svc_.acl->catalog();
    const int entry = catalog.find("fg.take");
    if (entry < 0) return true;
    acl_words_.assign({catalog.at(entry).name, key});
    size_t pos = 0;
    const AclDenied d = user_->check(entry, acl_words_, &pos);
    if (d == AclDenied::kNone) return true;
    svc_.acl->refused(d, "toplevel", d == AclDenied::kKey ? key : catalog.at(entry).name,
                      user_->name(), "quota service (rls-port)");
    return false;
  }

  void abandon(const RlqsHolder& h, rlqs_pb::RateLimitQuotaResponse& out) {
    rules_.stats().rlqs_abandoned.fetch_add(1, std::memory_order_relaxed);
    Action* a = out.add_bucket_action();
    *a->mutable_bucket_id() = h.id;
    a->mutable_abandon_action();
  }

  void leave(const RlqsHolder&) { --holders_; }

  // The holder's assignment (`a`) sent, with a time to live of whole seconds.
  void send(RlqsHolder& h, const RlqsAssigned& a, int64_t now_ns,
            rlqs_pb::RateLimitQuotaResponse& out) {
    Action* act = out.add_bucket_action();
    *act->mutable_bucket_id() = h.id;
    auto* q = act->mutable_quota_assignment_action();
    auto* strategy = q->mutable_rate_limit_strategy();
    switch (a.rule) {
      case RlqsAssigned::Rule::kAllowAll:
        strategy->set_blanket_rule(Strategy::ALLOW_ALL);
        break;
      case RlqsAssigned::Rule::kDenyAll:
        strategy->set_blanket_rule(Strategy::DENY_ALL);
        rules_.stats().rlqs_denials.fetch_add(1, std::memory_order_relaxed);
        break;
      case RlqsAssigned::Rule::kBucket:
      case RlqsAssigned::Rule::kNone: {
        auto* tb = strategy->mutable_token_bucket();
        tb->set_max_tokens(static_cast<uint32_t>(a.max_tokens));
        tb->mutable_tokens_per_fill()->set_value(static_cast<uint32_t>(a.tokens_per_fill));
        tb->mutable_fill_interval()->set_seconds(a.fill_seconds);
        if (!(a == h.assigned)) {
          rules_.stats().rlqs_slices.fetch_add(1, std::memory_order_relaxed);
          rules_.stats().rlqs_slice_tokens.fetch_add(static_cast<uint64_t>(a.max_tokens),
                                                     std::memory_order_relaxed);
        }
        break;
      }
    }
    q->mutable_assignment_time_to_live()->set_seconds(kRlqsTtlSeconds);
    h.assigned = a;
    h.expires_ns = now_ns + kRlqsTtlSeconds * 1'000'000'000;
  }

  // The assignment a share of `rate` makes: a token bucket of that rate, its burst a part of
  // the capacity in proportion (a window's: a tenth of a second of its rate); DENY_ALL for a
  // limit of none.
  RlqsAssigned assignment_for(const RlqsHolder& h, double rate) const {
    RlqsAssigned a;
    const double full = rate_of(h.spec);
    if (full <= 0 || h.spec.a == 0) {
      a.rule = RlqsAssigned::Rule::kDenyAll;
      return a;
    }
    const double part = std::clamp(rate / full, 0.0, 1.0);
    const int64_t burst =
        window_kind(h.spec.kind)
            ? static_cast<int64_t>(std::floor(rate * kWindowBurstS))
            : static_cast<int64_t>(std::floor(static_cast<double>(capacity_of(h.spec)) * part));
    return rlqs_bucket(rate, std::max<int64_t>(1, burst));
  }

  void due(RlqsStream& s, int64_t now_ns, RlqsWork& work, rlqs_pb::RateLimitQuotaResponse& out) {
    work.clear();
    refresh();
    for (auto it = s.holders.begin(); it != s.holders.end();) {
      RlqsHolder& h = it->second;
      if (h.waiting) {
        ++it;
        continue;
      }
      if (!recheck(s, h, now_ns, out)) {
        leave(h);
        abandon(h, out);
        it = s.holders.erase(it);
        continue;
      }
      const std::string& name = it->first;
      if (h.unlimited) {
        if (h.assigned.rule != RlqsAssigned::Rule::kAllowAll ||
            h.expires_ns - now_ns < kRlqsRefreshNs) {
          RlqsAssigned a;
          a.rule = RlqsAssigned::Rule::kAllowAll;
          send(h, a, now_ns, out);
        }
        ++it;
        continue;
      }
      const size_t before = work.items.size();
      if (h.pending_charge > 0) {
        // (no more than one period's worth at once: a report's debt is bounded)
        const int64_t cost = std::min(h.pending_charge, capacity_of(h.spec));
        work.items.push_back({name, h.key, RlqsWork::What::kCharge, cost});
      }
      if (!h.stale.empty()) {
        work.items.push_back({name, rlqs_demand_key(h.key), RlqsWork::What::kPrune, 0});
      }
      if (h.due_ns <= now_ns) {
        work.items.push_back({name, rlqs_demand_key(h.key), RlqsWork::What::kDemand, 0});
        h.due_ns = now_ns + options_.slice_ns;
        note_use(s, h, now_ns);
      } else if (h.assigned.rule != RlqsAssigned::Rule::kNone &&
                 h.expires_ns - now_ns < kRlqsRefreshNs) {
        send(h, h.assigned, now_ns, out);  // (the same again: its time to live renewed)
      }
      h.waiting = work.items.size() > before;
      ++it;
    }
    for (std::string& gone : evicted_) {
      work.items.push_back({"", std::move(gone), RlqsWork::What::kReset, 0});
    }
    evicted_.clear();
    make_requests(s, now_ns, work);
  }

  // The rules reloaded or a policy changed: the holder's rule again; false when it has none
  // any more (abandoned).
  bool recheck(RlqsStream& s, RlqsHolder& h, int64_t now_ns, rlqs_pb::RateLimitQuotaResponse&) {
    if (h.rules_version != cfg_version_) {
      RlqsHolder again;
      again.id = h.id;
      if (!place(s, again, now_ns)) return false;
      if (again.key != h.key || again.spec.kind != h.spec.kind || again.spec.a != h.spec.a ||
          again.spec.b != h.spec.b || again.spec.c != h.spec.c || again.unlimited != h.unlimited) {
        h.key = again.key;
        h.limit = again.limit;
        h.spec = again.spec;
        h.unlimited = again.unlimited;
        h.due_ns = now_ns;
      }
      h.rules_version = cfg_version_;
    }
    if (!h.unlimited && !h.limit.policy.empty() && h.policy_version != policy_version_) {
      const LimitSpec before = h.spec;
      if (!resolve(h)) return false;
      if (before.kind != h.spec.kind || before.a != h.spec.a || before.b != h.spec.b ||
          before.c != h.spec.c) {
        h.due_ns = now_ns;  // (its share of the new limit, now)
      }
    }
    return true;
  }

  void make_requests(RlqsStream& s, int64_t now_ns, RlqsWork& work) {
    const int64_t until_ms = (now_ns + kStalePeriods * options_.slice_ns) / 1'000'000;
    for (RlqsWork::Item& item : work.items) {
      item.first = work.requests.size();
      Request r;
      r.metric = kRlqsCommandId;
      r.key = item.key;
      auto data = [&](DataCmd c, std::vector<std::string> words) {
        auto& argv = work.argvs.emplace_back();
        for (std::string& w : words) argv.push_back(work.texts.emplace_back(std::move(w)));
        Request d = r;
        d.verb = Verb::kData;
        d.data = c;
        d.args = &argv;
        d.key = argv[1];
        work.requests.push_back(d);  // (the node's own bookkeeping: no user's rights)
      };
      switch (item.what) {
        case RlqsWork::What::kReset:
          r.verb = Verb::kReset;
          r.command = "fg.reset";
          work.requests.push_back(r);
          break;
        case RlqsWork::What::kDemand: {
          const RlqsHolder& h = s.holders.find(item.bucket)->second;
          data(DataCmd::kHSet,
               {"HSET", item.key, std::to_string(h.holder_id), demand_value(h.demand, until_ms)});
          // (the table goes when its last holder's field would be stale)
          data(DataCmd::kPExpire, {"PEXPIRE", item.key,
                                   std::to_string(kStalePeriods * options_.slice_ns / 1'000'000)});
          data(DataCmd::kHGetAll, {"HGETALL", item.key});
          item.count = 3;
          break;
        }
        case RlqsWork::What::kPrune: {
          RlqsHolder& h = s.holders.find(item.bucket)->second;
          std::vector<std::string> words = {"HDEL", item.key};
          for (std::string& f : h.stale) words.push_back(std::move(f));
          h.stale.clear();
          data(DataCmd::kHDel, std::move(words));
          break;
        }
        case RlqsWork::What::kCharge: {
          const RlqsHolder& h = s.holders.find(item.bucket)->second;
          r.verb = Verb::kAdjust;
          r.spec = h.spec;
          r.spec.on_unavailable = on_unavailable(s);
          r.cost = item.cost;
          r.asker = user_.get();
          r.command = "fg.adjust";
          work.requests.push_back(r);
          break;
        }
      }
    }
  }

  FailMode on_unavailable(const RlqsStream& s) const {
    const RlsDomain* d = cfg_ ? cfg_->domain(s.domain) : nullptr;
    return d ? d->on_unavailable : FailMode::kError;
  }

  void settle(RlqsStream& s, RlqsWork& work, const Outcome* outcomes, int64_t now_ns,
              rlqs_pb::RateLimitQuotaResponse& out) {
    auto& stats = rules_.stats();
    for (const RlqsWork::Item& item : work.items) {
      if (item.what == RlqsWork::What::kReset || item.what == RlqsWork::What::kPrune) continue;
      auto it = s.holders.find(item.bucket);
      if (it == s.holders.end()) continue;
      RlqsHolder& h = it->second;
      h.waiting = false;
      if (item.what == RlqsWork::What::kCharge) {
        const Outcome& o = outcomes[item.first];
        if (o.ok()) {
          h.charged = std::min(h.charged + item.cost, kMaxCount);
          h.pending_charge = std::max<int64_t>(0, h.pending_charge - item.cost);
          stats.rlqs_charged.fetch_add(static_cast<uint64_t>(item.cost), std::memory_order_relaxed);
        }
        continue;
      }
      // kDemand: the table as read (the HGETALL, the item's third answer).
      const Outcome& set = outcomes[item.first];
      const Outcome& table = outcomes[item.first + 2];
      if (!set.ok() || !table.ok() || !table.reply || table.reply->is_error()) {
        // No copy of the table reachable: the share in force stays (its time to live renewed
        // while it lasts: the gateway keeps its share, not its no-assignment rule), or, for
        // a domain that says so, ALLOW_ALL; tried again shortly.
        h.due_ns = now_ns + std::min(kRetryNs, options_.slice_ns);
        if (on_unavailable(s) == FailMode::kOpen) {
          RlqsAssigned a;
          a.rule = RlqsAssigned::Rule::kAllowAll;
          if (!(a == h.assigned) || h.expires_ns - now_ns < kRlqsRefreshNs) send(h, a, now_ns, out);
        } else if (h.assigned.rule != RlqsAssigned::Rule::kNone &&
                   h.expires_ns - now_ns < kRlqsRefreshNs) {
          send(h, h.assigned, now_ns, out);
        }
        continue;
      }
      share(h, *table.reply, now_ns, out);
    }
  }

  // The holder's share from its counter's demand table; a new assignment sent when it moved
  // by more than kShareSlack (or was none, or runs out soon).
  void share(RlqsHolder& h, const DataReply& table, int64_t now_ns,
             rlqs_pb::RateLimitQuotaResponse& out) {
    const int64_t now_ms = now_ns / 1'000'000;
    const std::string mine = std::to_string(h.holder_id);
    std::vector<double> demands;
    size_t me = SIZE_MAX;
    const auto& items = table.items;
    for (size_t i = 1; i + 1 < items.size(); i += 2) {
      double d;
      int64_t until_ms;
      if (!parse_demand(items[i + 1].s, d, until_ms)) continue;
      if (until_ms < now_ms) {
        // (deleted only once long stale: a holder whose look failed a while writes again)
        const int64_t long_ago_ms = now_ms - kStalePeriods * options_.slice_ns / 1'000'000;
        if (until_ms < long_ago_ms && h.stale.size() < 64) h.stale.push_back(items[i].s);
        continue;
      }
      if (items[i].s == mine) me = demands.size();
      demands.push_back(d);
    }
    if (me == SIZE_MAX) {  // (not in the table as read: counted as it wrote itself)
      me = demands.size();
      demands.push_back(h.demand);
    }
    const double rate = rlqs_share(rate_of(h.spec), demands, me);
    h.share_rate = rate;
    const RlqsAssigned next = assignment_for(h, rate);
    const double was = h.assigned.rate();
    const bool moved = h.assigned.rule != next.rule || h.assigned.max_tokens != next.max_tokens ||
                       std::fabs(next.rate() - was) > kShareSlack * std::max(was, 0.1);
    if (moved) {
      send(h, next, now_ns, out);
    } else if (h.expires_ns - now_ns < kRlqsRefreshNs) {
      send(h, h.assigned, now_ns, out);
    }
  }

  void forget(RlqsStream& s) {
    for (auto& [name, h] : s.holders) leave(h);
    s.holders.clear();
  }

 private:
  Services& svc_;
  RlsRules& rules_;
  const RlqsOptions options_;
  std::shared_ptr<const AclUser> user_;
  uint64_t user_version_ = 0;
  std::shared_ptr<const RlsConfig> cfg_;
  uint64_t cfg_version_ = 0;
  std::shared_ptr<const PolicySet> policies_;
  uint64_t policy_version_ = 0;
  std::shared_ptr<RlsKeys> made_;     // the counters each domain made here
  std::vector<std::string> evicted_;  // counters forgotten to make room, to be reset
  int64_t holders_ = 0;               // buckets of every stream
  uint64_t next_id_;

 public:
  uint64_t arrivals_ = 0;

 private:
  // (working space, kept between reports)
  floodgate::rlqs::UsageReportsWire wire_;
  floodgate::rlqs::UsageMapEntry entry_;
  Usage usage_;
  std::vector<RlsEntry> entries_;
  std::string key_;
  std::vector<std::string_view> acl_words_;
};

RlqsQuota::RlqsQuota(Services& svc, RlsRules& rules, RlqsOptions options)
    : impl_(std::make_unique<Impl>(svc, rules, std::move(options))) {}
RlqsQuota::~RlqsQuota() = default;

RlsStatus RlqsQuota::report(RlqsStream& s, std::string_view bytes, int64_t now_ns,
                            rlqs_pb::RateLimitQuotaResponse& out) {
  return impl_->report(s, bytes, now_ns, out);
}
void RlqsQuota::due(RlqsStream& s, int64_t now_ns, RlqsWork& work,
                    rlqs_pb::RateLimitQuotaResponse& out) {
  impl_->due(s, now_ns, work, out);
}
void RlqsQuota::settle(RlqsStream& s, RlqsWork& work, const Outcome* outcomes, int64_t now_ns,
                       rlqs_pb::RateLimitQuotaResponse& out) {
  impl_->settle(s, work, outcomes, now_ns, out);
}
void RlqsQuota::forget(RlqsStream& s) { impl_->forget(s); }
uint64_t RlqsQuota::arrivals() const { return impl_->arrivals_; }

int64_t RlqsQuota::next_due(const RlqsStream& s) {
  int64_t at = std::numeric_limits<int64_t>::max();
  for (const auto& [name, h] : s.holders) {
    if (h.waiting) continue;
    at = std::min(at, h.unlimited ? h.expires_ns - kRlqsRefreshNs : h.due_ns);
  }
  return at;
}

}  // namespace fg
