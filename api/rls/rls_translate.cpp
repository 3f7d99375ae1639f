#include "rls_translate.hpp"

#include <algorithm>
#include <limits>

#include "command_table.hpp"
#include "errors.hpp"
#include "key_table.hpp"
#include "services.hpp"

namespace fg {

namespace rls = envoy::service::ratelimit::v3;

namespace {

// Upstream's NEAR_LIMIT_RATIO: a hit past this share of the limit is "near" it.
constexpr double kNearLimitRatio = 0.8;
// Bounds on one call (a gateway sends a few descriptors of a few entries each).
constexpr int kMaxDescriptors = 1024;
constexpr int kMaxEntries = 64;
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

class RlsTranslator::Impl {
 public:
  Impl(Services& svc, RlsRules& rules, std::string user, bool response_headers,
       std::shared_ptr<RlsKeys> keys)
      : svc_(svc),
        rules_(rules),
        user_name_(std::move(user)),
        response_headers_(response_headers),
        keys_(std::move(keys)) {}

  // The user the door acts as and the rules, looked up again only when they change (the
  // queue's thread's own copies: no lock, no reference counted per call).
  const std::shared_ptr<const AclUser>& user() {
    if (!user_ || user_version_ != svc_.acl->version()) {
      user_version_ = svc_.acl->version();
      user_ = svc_.acl->find(user_name_);
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

  RlsStatus prepare(RlsCallState& c) {
    const rls::RateLimitRequest& req = c.request;
    if (req.domain().empty()) {
      return {RlsStatusCode::kInvalidArgument, "rate limit domain must not be empty"};
    }
    if (req.descriptors().empty()) {
      return {RlsStatusCode::kInvalidArgument, "rate limit descriptor list must not be empty"};
    }
    if (req.descriptors_size() > kMaxDescriptors) {
      return {RlsStatusCode::kInvalidArgument,
              "too many descriptors: at most " + std::to_string(kMaxDescriptors)};
    }
    c.user = user();
    if (!c.user || !c.user->enabled()) {
      return {RlsStatusCode::kPermissionDenied,
              "the rls-user '" + user_name_ + "' does not exist or is disabled"};
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
    // (every key's string made before any is taken a view of; their capacity is kept)
    if (c.keys.size() < c.items.size()) c.keys.resize(c.items.size());
    size_t nkeys = 0;
    for (int i = 0; i < req.descriptors_size(); ++i) {
      const auto& d = req.descriptors(i);
      RlsCallState::Item& it = c.items[i];
      if (d.entries_size() > kMaxEntries) {
        return {RlsStatusCode::kInvalidArgument, "too many entries in descriptor " +
                                                     std::to_string(i) + ": at most " +
                                                     std::to_string(kMaxEntries)};
      }
      entries.clear();
      for (const auto& e : d.entries()) entries.push_back({e.key(), e.value()});
      it.hits =
          d.has_hits_addend() ? d.hits_addend().value() : std::max<uint64_t>(1, req.hits_addend());
      if (it.hits > static_cast<uint64_t>(kMaxCount)) {
        return {RlsStatusCode::kInvalidArgument,
                "hits_addend of descriptor " + std::to_string(i) + " is too large"};
      }
      std::string& key = c.keys[nkeys];
      key.assign(kKeyPrefix);
      if (d.has_limit()) {
        // The caller's own limit: never shadow, counted under the descriptor's key.
        const int unit = d.limit().unit();
        if (unit < 1 || unit > 6) {
          return {RlsStatusCode::kInvalidArgument,
                  "descriptor " + std::to_string(i) + " has a limit override without a unit"};
        }
        it.own.requests_per_unit = d.limit().requests_per_unit();
        it.own.unit = static_cast<RlsUnit>(unit);
        std::string stats_key;
        key.append(req.domain()).append("_");
        for (const RlsEntry& e : entries) {
          stats_key.append(stats_key.empty() ? "" : ".").append(e.key);
          if (!e.value.empty()) stats_key.append("_").append(e.value);
          key.append(e.key).append("_").append(e.value).append("_");
        }
        it.own.full_key = req.domain() + "." + stats_key;
        it.stats = rules_.stats().get(req.domain(), stats_key,
                                      rules_.stats().get(req.domain(), "(limit override)"));
        it.limit = &it.own;
      } else {
        RlsMatch& m = match_;
        c.cfg->match(req.domain(), entries, rules_.stats(), m);
        if (!m.limit) continue;
        for (const std::string& r : m.limit->replaces) replaced.push_back(r);
        if (m.limit->unlimited) {
          it.unlimited = true;
          continue;
        }
        it.limit = m.limit;
        it.stats = m.stats;
        key += m.counter;
      }
      // The counter's key: upstream's cache key without the window's start (the window is
      // the limiter's), with the unit (a changed unit is a new counter, as upstream's).
      const RlsLimit& l = *it.limit;
      if (!l.policy.empty()) {
        if (!policies) policies = svc_.policies->snapshot();
        key.append("policy:").append(l.policy);
        auto spec = policies->resolve(key, l.policy);
        if (!spec.ok()) {
          return {RlsStatusCode::kFailedPrecondition,
                  l.full_key + ": " + std::string(spec.error())};
        }
        if (!rate_kind(spec->kind)) {
          return {RlsStatusCode::kFailedPrecondition,
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
        return {RlsStatusCode::kInvalidArgument,
                "descriptor " + std::to_string(i) + " is too long: its counter's key (domain, " +
                    "keys and values) would pass " + std::to_string(kMaxKeyLen) + " bytes"};
      }
      it.job = 0;  // (numbered below, once replaces are known)
      ++nkeys;
    }
    // A limit another matched limit replaces is dropped (OK, without current_limit).
    size_t key_index = 0;
    for (RlsCallState::Item& it : c.items) {
      if (it.job < 0) continue;
      const std::string& key = c.keys[key_index++];
      if (!it.limit->name.empty() &&
          std::find(replaced.begin(), replaced.end(), it.limit->name) != replaced.end()) {
        it.job = -1;
        it.limit = nullptr;
        continue;
      }
      if (!c.user->unrestricted()) {
        if (RlsStatus refused = acl_check(*c.user, it.hits == 0, key); !refused.ok()) {
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
      if (r.verb == Verb::kTake) new_keys_.push_back({key, lifetime_of(*it.limit, it.spec)});
    }
    // What the call may make: bounded per domain (those no file names share one allowance)
    // and per call, so an open door cannot be made to fill the node with counters.
    // A full domain forgets its heaviest caller's oldest counters (rls_keys.hpp): their keys
    // are reset with the call's requests (the node's bookkeeping: no user's rights).
    std::string why;
    c.evicted.clear();
    const bool ok = keys_->note(domain ? req.domain() : std::string_view(), c.caller, new_keys_,
                                svc_.clock->now_ns(), c.evicted, why);
    new_keys_.clear();
    if (!ok) {
      rules_.stats().keys_refused.fetch_add(1, std::memory_order_relaxed);
      return {RlsStatusCode::kResourceExhausted, why};
    }
    rules_.stats().keys_evicted.fetch_add(c.evicted.size(), std::memory_order_relaxed);
    for (const std::string& gone : c.evicted) {
      Request r;
      r.verb = Verb::kReset;
      r.metric = kRlsCommandId;
      r.key = gone;
      r.command = "fg.reset";
      c.requests.push_back(r);
    }
    return RlsStatus{};
  }

  // How long a counter lives at most: its window (a unit of the rule's, or its policy's).
  static int64_t lifetime_of(const RlsLimit& l, const LimitSpec& spec) {
    constexpr int64_t kSecondNs = 1'000'000'000;
    int64_t ns = l.policy.empty() ? rls_unit_seconds(l.unit) * kSecondNs : spec.c;
    return std::clamp<int64_t>(ns, kSecondNs, int64_t{366} * 86400 * kSecondNs);
  }

  // The door's user's rights on a take (or a check: a peek) of `key`, as the RESP door
  // checks FG.TAKE and FG.PEEK; a refusal goes to ACL LOG. (The key's owner checks again.)
  RlsStatus acl_check(const AclUser& user, bool peek, std::string_view key) {
    const AclCatalog& catalog = svc_.acl->catalog();
    const int entry = catalog.find(peek ? "fg.peek" : "fg.take");
    if (entry < 0) return RlsStatus{};
    acl_words_.assign({catalog.at(entry).name, key});
    size_t pos = 0;
    const AclDenied d = user.check(entry, acl_words_, &pos);
    if (d == AclDenied::kNone) return RlsStatus{};
    svc_.acl->refused(d, "toplevel", d == AclDenied::kKey ? key : catalog.at(entry).name,
                      user.name(), "gateway door (rls-port)");
    return {RlsStatusCode::kPermissionDenied, acl_denied_error(catalog, d, entry)};
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

  RlsStatus answer(RlsCallState& c, const Outcome* outcomes) {
    rls::RateLimitResponse& resp = *c.response;
    const int64_t now_s = svc_.clock->now_ns() / 1'000'000'000;
    int failed = 0, quota_total = 0, quota_failed = 0;
    const rls::RateLimitResponse::DescriptorStatus* nearest = nullptr;
    uint32_t nearest_remaining = std::numeric_limits<uint32_t>::max();
    for (RlsCallState::Item& it : c.items) {
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
          return status_of(o);
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
    if (response_headers_ && nearest) {
      auto add = [&](const char* name, uint64_t v) {
        auto* h = resp.add_response_headers_to_add();
        h->set_key(name);
        h->set_value(std::to_string(v));
      };
      add("RateLimit-Limit", nearest->current_limit().requests_per_unit());
      add("RateLimit-Remaining", nearest->limit_remaining());
      add("RateLimit-Reset", static_cast<uint64_t>(nearest->duration_until_reset().seconds()));
    }
    return {};
  }

  static RlsStatus status_of(const Outcome& o) {
    const std::string text(o.error);
    switch (o.code) {
      case Code::kTryAgain:
      case Code::kClusterDown:
      case Code::kNotReplicated:
        return {RlsStatusCode::kUnavailable, text};
      case Code::kWrongType:
        return {RlsStatusCode::kFailedPrecondition, text};
      case Code::kKeyLimit:
        return {RlsStatusCode::kResourceExhausted, text};
      default:
        if (text.rfind("NOPERM", 0) == 0) return {RlsStatusCode::kPermissionDenied, text};
        return {RlsStatusCode::kInternal, text};
    }
  }

  Services& svc_;
  RlsRules& rules_;
  const std::string user_name_;
  const bool response_headers_;
  std::shared_ptr<const AclUser> user_;
  uint64_t user_version_ = 0;
  std::shared_ptr<const RlsConfig> cfg_;
  uint64_t cfg_version_ = 0;
  std::vector<RlsEntry> entries_;
  std::vector<std::string_view> replaced_;
  std::shared_ptr<RlsKeys> keys_;  // (shared by the door's threads)
  std::vector<RlsKeys::Key> new_keys_;
  std::vector<std::string_view> acl_words_;
  RlsMatch match_;
};

RlsTranslator::RlsTranslator(Services& svc, RlsRules& rules, std::string user,
                             bool response_headers, std::shared_ptr<RlsKeys> keys)
    : impl_(
          std::make_unique<Impl>(svc, rules, std::move(user), response_headers, std::move(keys))) {}
RlsTranslator::~RlsTranslator() = default;

RlsStatus RlsTranslator::prepare(RlsCallState& c) { return impl_->prepare(c); }
RlsStatus RlsTranslator::answer(RlsCallState& c, const Outcome* outcomes) {
  return impl_->answer(c, outcomes);
}

}  // namespace fg
