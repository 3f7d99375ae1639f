#include "rlqs.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

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
// A slice's token bucket never refills within its life: one token a day.
constexpr int64_t kNoRefillSeconds = 86'400;
// How soon a grant the cluster could not make is tried again.
constexpr int64_t kRetryNs = 250'000'000;
// A slice extended period after period (its gateway spends it slowly) is replaced after
// this many periods: its tokens are not held by one gateway for ever.
constexpr int64_t kMaxSliceLife = 10;

bool sliceable(Kind k) {
  // Not a sliding log: it keeps each admission's own time, which a slice (admitted later than
  // it was taken) cannot give it — its exactness is the point of that kind.
  return k == Kind::kTokenBucket || k == Kind::kGcra || k == Kind::kFixedWindow ||
         k == Kind::kSlidingWindow || k == Kind::kCalendarWindow;
}
bool window_kind(Kind k) { return k == Kind::kFixedWindow || k == Kind::kCalendarWindow; }

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

void set_duration(google::protobuf::Duration* d, int64_t ns) {
  d->set_seconds(ns / 1'000'000'000);
  d->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

}  // namespace

std::string rlqs_holders_key(std::string_view key) { return "rlqs-holders:" + std::string(key); }

int64_t rlqs_slice_size(int64_t share, int64_t remaining, double demand_per_s, int64_t slice_ns,
                        int64_t first) {
  int64_t want = first;
  if (demand_per_s >= 0) {
    // What it asked for in a slice's time, half as much again (room to grow), and one.
    const double d = demand_per_s * static_cast<double>(slice_ns) / 1e9 * 1.5 + 1;
    want = d >= static_cast<double>(kMaxCount) ? kMaxCount : static_cast<int64_t>(std::ceil(d));
  }
  want = std::min(want, share);
  if (remaining >= 0) want = std::min(want, remaining);
  return std::max<int64_t>(1, want);
}

class RlqsQuota::Impl {
 public:
  Impl(Services& svc, RlsRules& rules, RlqsOptions options)
      : svc_(svc),
        rules_(rules),
        options_(std::move(options)),
        made_(options_.keys
                  ? options_.keys
                  : std::make_shared<RlsKeys>(static_cast<size_t>(options_.max_keys_per_domain))) {}

  // The counters this thread's holders draw on: how many hold each here, and what the
  // counter had left at its last grant (-1: not known).
  struct Key {
    int64_t holders = 0;      // here
    int64_t everywhere = 0;   // cluster-wide, as the holders' leases last counted them
    uint64_t generation = 0;  // moves on when a holder arrives
    int64_t remaining = -1;
    int64_t sharers() const { return std::max(holders, everywhere); }
  };

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
      const bool first = it == s.holders.end();  // (its subscription)
      if (first) {
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
        it = s.holders.emplace(std::move(name), std::move(h)).first;
        Key& k = keys_[it->second.key];
        ++k.holders;
        ++k.generation;
        ++arrivals_;
        ++holders_;
      }
      RlqsHolder& h = it->second;
      const int64_t allowed = static_cast<int64_t>(
          std::min<uint64_t>(usage_.num_requests_allowed(), static_cast<uint64_t>(kMaxCount)));
      const int64_t denied = static_cast<int64_t>(
          std::min<uint64_t>(usage_.num_requests_denied(), static_cast<uint64_t>(kMaxCount)));
      h.reported = std::min(h.reported + allowed, kMaxCount);
      h.spent = std::min(h.spent + allowed, kMaxCount);
      const double elapsed = static_cast<double>(usage_.time_elapsed().seconds()) +
                             usage_.time_elapsed().nanos() / 1e9;
      // (the first report is the subscription: its demand is not yet the gateway's rate)
      if (elapsed > 0 && !first) {
        const double seen = static_cast<double>(allowed + denied) / elapsed;
        h.demand = h.demand < 0 ? seen : (h.demand + seen) / 2;
      }
      // Its slice spent: the next one now, not at the period's end. (Not before: a new
      // slice is a new bucket at the gateway, and what the old one had left would be lost.)
      if (h.slice > 0 && h.spent >= h.slice && now_ns < h.expires_ns) {
        h.due_ns = std::min(h.due_ns, now_ns);
      }
    }
    return {};
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
      // A counter its domain has no room for (the values are the gateway's to choose).
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

  // Its counter is used (a slice taken from it): the most recently used of its caller's again,
  // or made again if a full domain forgot it meanwhile (and reset it: rls_keys.hpp), so the
  // bookkeeping holds every counter a bucket draws on.
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

  // The holder's limit as a spec (a policy's looked up now); false when it cannot be sliced.
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
                                     : std::string("cannot be sliced (a sliding log, a "
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

  void leave(const RlqsHolder& h) {
    --holders_;
    auto k = keys_.find(h.key);
    if (k != keys_.end() && --k->second.holders <= 0) keys_.erase(k);
  }

  void due(RlqsStream& s, int64_t now_ns, RlqsWork& work, rlqs_pb::RateLimitQuotaResponse& out) {
    work.items.clear();
    work.requests.clear();
    refresh();
    for (auto it = s.holders.begin(); it != s.holders.end();) {
      RlqsHolder& h = it->second;
      if (h.waiting) {
        ++it;
        continue;
      }
      // The rules reloaded: the bucket's rule again (gone: abandoned).
      if (h.rules_version != cfg_version_) {
        RlqsHolder again;
        again.id = h.id;
        if (!place(s, again, now_ns)) {
          leave(h);
          abandon(h, out);
          it = s.holders.erase(it);
          continue;
        }
        if (again.key != h.key || again.spec.kind != h.spec.kind || again.spec.a != h.spec.a ||
            again.spec.b != h.spec.b || again.spec.c != h.spec.c ||
            again.unlimited != h.unlimited) {
          leave(h);
          ++holders_;
          Key& k = keys_[again.key];
          ++k.holders;
          ++k.generation;
          h.key = again.key;
          h.limit = again.limit;
          h.spec = again.spec;
          h.unlimited = again.unlimited;
          h.assigned = false;
          h.renew = true;
          h.due_ns = now_ns;
        }
        h.rules_version = cfg_version_;
      }
      // A policy changed: the next slice now, sized by the new limit.
      if (!h.unlimited && !h.limit.policy.empty() && h.policy_version != policy_version_) {
        const LimitSpec before = h.spec;
        if (!resolve(h)) {
          leave(h);
          abandon(h, out);
          it = s.holders.erase(it);
          continue;
        }
        if (before.kind != h.spec.kind || before.a != h.spec.a || before.b != h.spec.b ||
            before.c != h.spec.c) {
          keys_[h.key].remaining = -1;
          h.renew = true;
          h.due_ns = now_ns;
        }
      }
      const std::string& name = it->first;
      if (h.unlimited) {
        if (!h.assigned) {
          h.assigned = true;
          Action* a = out.add_bucket_action();
          *a->mutable_bucket_id() = h.id;
          a->mutable_quota_assignment_action()->mutable_rate_limit_strategy()->set_blanket_rule(
              Strategy::ALLOW_ALL);
        }
        ++it;
        continue;
      }
      // Requests it let through beyond its slices (its fallbacks' admissions): charged.
      if (const int64_t beyond = h.reported - h.charged - h.granted; beyond > 0) {
        work.items.push_back({name, h.key, RlqsWork::What::kCharge, beyond});
        h.waiting = true;
      }
      // Once a period, its lease among the counter's holders on every node (counted first:
      // a share is the remaining capacity's among all of them).
      if (h.counted_at < 0 || now_ns - h.counted_at >= options_.slice_ns) {
        work.items.push_back({name, rlqs_holders_key(h.key), RlqsWork::What::kCount, 1});
        h.counted_at = now_ns;
        h.waiting = true;
      }
      // One holder's share: the counter's capacity or a period's rate, whichever is more,
      // among its holders (not its remaining's: the others' shares are taken already); the
      // first slice, the rate's share.
      Key& k = keys_[h.key];
      const double sharers = static_cast<double>(std::max<int64_t>(1, k.sharers()));
      const double period_rate = rate_of(h.spec) * static_cast<double>(options_.slice_ns) / 1e9;
      const auto ceil_of = [](double x) {
        return std::max<int64_t>(1, x >= static_cast<double>(kMaxCount)
                                        ? kMaxCount
                                        : static_cast<int64_t>(std::ceil(x)));
      };
      const int64_t share =
          ceil_of(std::max(static_cast<double>(capacity_of(h.spec)), period_rate) / sharers);
      const int64_t want = rlqs_slice_size(share, k.remaining, h.demand, options_.slice_ns,
                                           ceil_of(period_rate / sharers));
      // Others arrived since it was sized: a smaller share now, not at the period's end.
      const bool shrink = h.generation != k.generation && h.slice > want;
      if (h.due_ns <= now_ns && !shrink && extend(h, now_ns, out)) {
        ++it;
        continue;
      }
      if (h.due_ns <= now_ns || shrink) {
        work.items.push_back({name, h.key, RlqsWork::What::kSlice, h.spec.a == 0 ? 1 : want});
        h.waiting = true;
        h.generation = k.generation;
        note_use(s, h, now_ns);
      }
      ++it;
    }
    for (std::string& gone : evicted_)
      work.items.push_back({"", std::move(gone), RlqsWork::What::kReset, 0});
    evicted_.clear();
    if (work.items.empty()) return;
    work.requests.reserve(work.items.size());
    for (const RlqsWork::Item& item : work.items) {
      Request r;
      r.metric = kRlqsCommandId;
      r.key = item.key;
      if (item.what == RlqsWork::What::kReset) {  // (the node's bookkeeping: no user's rights)
        r.verb = Verb::kReset;
        r.command = "fg.reset";
        work.requests.push_back(r);
        continue;
      }
      const RlqsHolder& h = s.holders.find(item.bucket)->second;
      if (item.what == RlqsWork::What::kCount) {
        // The node's own bookkeeping, not the gateway's: no user's rights or share. A lease
        // lives a period and a little: one live lease a holder, gone a period after it.
        r.verb = Verb::kAcquire;
        r.spec = LimitSpec::concurrency(kMaxLeaseLimit, options_.slice_ns + options_.slice_ns / 20);
        r.command = "fg.acquire";  // (no holder: nobody renews or releases it)
        work.requests.push_back(r);
        continue;
      }
      const bool charge = item.what == RlqsWork::What::kCharge;
      r.verb = charge ? Verb::kAdjust : Verb::kTake;
      r.spec = h.spec;
      r.spec.on_unavailable = on_unavailable(s);
      r.cost = item.cost;
      r.asker = user_.get();
      r.command = charge ? "fg.adjust" : "fg.take";
      work.requests.push_back(r);
    }
  }

  // A slice not yet spent is extended — the same strategy again, with a new time to live,
  // which the gateway applies to the bucket it has — rather than replaced by a new one
  // (whose fresh bucket would drop what is left of this one). Not past its window's end,
  // nor past kMaxSliceLife periods.
  bool extend(RlqsHolder& h, int64_t now_ns, rlqs_pb::RateLimitQuotaResponse& out) {
    if (h.renew || h.slice <= 0 || now_ns >= h.expires_ns) return false;
    if (h.spent >= h.slice) return false;
    if (now_ns - h.sliced_at >= kMaxSliceLife * options_.slice_ns) return false;
    const int64_t ttl = std::min(options_.slice_ns + options_.slice_ns / 2, h.window_end - now_ns);
    if (ttl <= options_.slice_ns / 10) return false;
    Action* a = out.add_bucket_action();
    *a->mutable_bucket_id() = h.id;
    auto* q = a->mutable_quota_assignment_action();
    token_bucket(*q->mutable_rate_limit_strategy()->mutable_token_bucket(), h.slice, h.seq);
    set_duration(q->mutable_assignment_time_to_live(), ttl);
    h.expires_ns = now_ns + ttl;
    h.due_ns = now_ns + std::min(options_.slice_ns, ttl);
    return true;
  }

  static void token_bucket(envoy::type::v3::TokenBucket& tb, int64_t tokens, uint64_t seq) {
    tb.set_max_tokens(static_cast<uint32_t>(std::min<int64_t>(tokens, UINT32_MAX)));
    tb.mutable_tokens_per_fill()->set_value(1);
    tb.mutable_fill_interval()->set_seconds(kNoRefillSeconds);
    tb.set_name("floodgate slice " + std::to_string(seq));
  }

  FailMode on_unavailable(const RlqsStream& s) const {
    const RlsDomain* d = cfg_ ? cfg_->domain(s.domain) : nullptr;
    return d ? d->on_unavailable : FailMode::kError;
  }

  void settle(RlqsStream& s, RlqsWork& work, const Outcome* outcomes, int64_t now_ns,
              rlqs_pb::RateLimitQuotaResponse& out) {
    auto& stats = rules_.stats();
    for (size_t i = 0; i < work.items.size(); ++i) {
      const RlqsWork::Item& item = work.items[i];
      if (item.what == RlqsWork::What::kReset) continue;
      auto it = s.holders.find(item.bucket);
      if (it == s.holders.end()) continue;
      RlqsHolder& h = it->second;
      h.waiting = false;
      const Outcome& o = outcomes[i];
      if (item.what == RlqsWork::What::kCharge) {
        if (o.ok()) {
          h.charged += item.cost;
          stats.rlqs_charged.fetch_add(static_cast<uint64_t>(item.cost), std::memory_order_relaxed);
        }
        continue;
      }
      if (item.what == RlqsWork::What::kCount) {
        // (not reached: the count stays as it was, at least this node's holders)
        if (!o.ok()) continue;
        Key& k = keys_[h.key];
        const int64_t everywhere = o.acquire.granted ? o.acquire.held : kMaxLeaseLimit;
        if (everywhere > k.sharers()) {
          // Others arrived on other nodes: every holder here looks at its share again.
          ++k.generation;
          ++arrivals_;
        }
        k.everywhere = everywhere;
        continue;
      }
      if (!o.ok()) {
        if (o.code == Code::kTryAgain || o.code == Code::kClusterDown ||
            o.code == Code::kNotReplicated || o.code == Code::kKeyLimit) {
          // Nothing sent: its slice runs out, and the gateway's expired_assignment_behavior
          // decides meanwhile; tried again shortly.
          h.due_ns = now_ns + std::min(kRetryNs, options_.slice_ns);
          continue;
        }
        spdlog::warn("quota service: {} (key {}): {}; the bucket is abandoned", h.limit.full_key,
                     h.key, o.error);
        leave(h);
        abandon(h, out);
        s.holders.erase(it);
        continue;
      }
      Key& k = keys_[h.key];
      Action* a = out.add_bucket_action();
      *a->mutable_bucket_id() = h.id;
      auto* q = a->mutable_quota_assignment_action();
      const Decision& d = o.decision;
      int64_t ttl = options_.slice_ns + options_.slice_ns / 2;
      int64_t next = options_.slice_ns;
      if (o.unavailable != FailMode::kError) {
        // No copy of the counter reachable: the domain's on_unavailable answers.
        q->mutable_rate_limit_strategy()->set_blanket_rule(
            o.unavailable == FailMode::kOpen ? Strategy::ALLOW_ALL : Strategy::DENY_ALL);
        set_duration(q->mutable_assignment_time_to_live(), options_.slice_ns);
        h.slice = 0;
        h.due_ns = now_ns + options_.slice_ns;
        continue;
      }
      if (d.allowed) {
        h.slice = item.cost;
        h.granted = std::min(h.granted + item.cost, kMaxCount);
        h.spent = 0;
        h.sliced_at = now_ns;
        h.renew = false;
        h.window_end = std::numeric_limits<int64_t>::max();
        ++h.seq;
        k.remaining = d.remaining;
        if (window_kind(h.spec.kind) && d.reset_after_ns > 0) {
          // A window's slice ends with its window (its counter starts again then).
          h.window_end = now_ns + d.reset_after_ns;
          ttl = std::min(ttl, d.reset_after_ns);
          if (d.reset_after_ns <= next) {
            next = d.reset_after_ns;
            k.remaining = -1;
          }
        }
        token_bucket(*q->mutable_rate_limit_strategy()->mutable_token_bucket(), item.cost, h.seq);
        stats.rlqs_slices.fetch_add(1, std::memory_order_relaxed);
        stats.rlqs_slice_tokens.fetch_add(static_cast<uint64_t>(item.cost),
                                          std::memory_order_relaxed);
      } else if (d.remaining >= 1 && d.remaining < item.cost) {
        // Less left than its share: the rest of it, at once.
        out.mutable_bucket_action()->RemoveLast();
        k.remaining = d.remaining;
        h.due_ns = now_ns;
        continue;
      } else if (h.slice > 0 && !h.renew && now_ns + kRetryNs < h.expires_ns) {
        // Nothing left, but its slice still runs: it spends that first; asked again shortly.
        // (Not when its limit changed: the new one's answer goes out at once.)
        out.mutable_bucket_action()->RemoveLast();
        k.remaining = 0;
        h.due_ns = now_ns + kRetryNs;
        continue;
      } else {
        // Nothing left: DENY_ALL until a token is back (a window's: until it ends).
        h.slice = 0;
        k.remaining = 0;
        const int64_t back = d.retry_after_ns > 0 ? d.retry_after_ns : d.reset_after_ns;
        if (back > 0) next = std::min(next, back);
        ttl = next;
        q->mutable_rate_limit_strategy()->set_blanket_rule(Strategy::DENY_ALL);
        h.renew = false;
        stats.rlqs_denials.fetch_add(1, std::memory_order_relaxed);
        if (back > 0 && back <= options_.slice_ns) k.remaining = -1;
      }
      set_duration(q->mutable_assignment_time_to_live(), std::max<int64_t>(ttl, 1'000'000));
      h.assigned = true;
      h.expires_ns = now_ns + ttl;
      h.due_ns = now_ns + std::max<int64_t>(next, 1'000'000);
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
  std::unordered_map<std::string, Key> keys_;
  std::shared_ptr<RlsKeys> made_;     // the counters each domain made here
  std::vector<std::string> evicted_;  // counters forgotten to make room, to be reset
  int64_t holders_ = 0;               // buckets of every stream

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
    if (!h.waiting && !h.unlimited) at = std::min(at, h.due_ns);
  }
  return at;
}

}  // namespace fg
