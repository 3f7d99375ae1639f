// The quota service (RLQS) without gRPC: bucket rules, both encodings of a report, and the
// slices a stream's buckets get — sized, taken, assigned, denied, charged, abandoned —
// with the core's outcomes made by hand.
#include "rlqs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "clock.hpp"
#include "command_table.hpp"
#include "policy_registry.hpp"
#include "services.hpp"

namespace fg {
namespace {

using Usage = rlqs_pb::RateLimitQuotaUsageReports::BucketQuotaUsage;
using Strategy = envoy::type::v3::RateLimitStrategy;

constexpr const char* kRules =
    "domain: gw\n"
    "buckets:\n"
    "  - bucket: {name: api, tenant: \"*\"}\n"
    "    key: \"api:{tenant}\"\n"
    "    policy: gw\n"
    "  - bucket: {name: fixed}\n"
    "    rate_limit: {unit: minute, requests_per_unit: 60}\n"
    "  - bucket: {name: open}\n"
    "    rate_limit: {unlimited: true}\n"
    "  - bucket: {name: exact}\n"
    "    policy: exact\n";

constexpr int64_t kSec = 1'000'000'000;

struct Quota {
  ManualClock clock;
  PolicyRegistry policies;
  AclBook acl{acl_catalog(), clock};
  Services svc;
  std::string path;
  std::unique_ptr<RlsRules> rules;
  std::unique_ptr<RlqsQuota> quota;

  explicit Quota(const std::string& yaml = kRules) {
    svc.clock = &clock;
    svc.policies = &policies;
    svc.acl = &acl;
    policies.replace(PolicyMap{{"gw", LimitSpec::token_bucket(100, 10, kSec)},
                               {"exact", LimitSpec::window(Kind::kSlidingLog, 10, kSec)}});
    path =
        (std::filesystem::temp_directory_path() / ("rlqs-" + std::to_string(::getpid()) + ".yaml"))
            .string();
    std::ofstream(path) << yaml;
    rules = std::make_unique<RlsRules>(path);
    const Status st = rules->reload();
    EXPECT_TRUE(st.ok()) << st.error();
    RlqsOptions o;
    o.slice_ns = kSec;
    quota = std::make_unique<RlqsQuota>(svc, *rules, o);
  }
  ~Quota() { std::filesystem::remove(path); }
};

Usage usage(std::vector<std::pair<std::string, std::string>> id, uint64_t allowed, uint64_t denied,
            int64_t elapsed_ms = 1000) {
  Usage u;
  for (auto& [k, v] : id) (*u.mutable_bucket_id()->mutable_bucket())[k] = v;
  u.set_num_requests_allowed(allowed);
  u.set_num_requests_denied(denied);
  u.mutable_time_elapsed()->set_seconds(elapsed_ms / 1000);
  u.mutable_time_elapsed()->set_nanos(static_cast<int32_t>(elapsed_ms % 1000 * 1'000'000));
  return u;
}

// A report in upstream's encoding now: a map keyed by a hash of the bucket id.
std::string report_map(const std::string& domain, const std::vector<Usage>& us) {
  rlqs_pb::RateLimitQuotaUsageReports r;
  r.set_domain(domain);
  uint64_t key = 7;
  for (const Usage& u : us) (*r.mutable_bucket_quota_usages())[key++] = u;
  return r.SerializeAsString();
}

// The same before upstream's change: `repeated BucketQuotaUsage` with the same number.
std::string report_list(const std::string& domain, const std::vector<Usage>& us) {
  floodgate::rlqs::UsageReportsWire w;
  w.set_domain(domain);
  for (const Usage& u : us) w.add_bucket_quota_usages(u.SerializeAsString());
  return w.SerializeAsString();
}

Outcome granted(int64_t remaining, int64_t reset_ns = 10 * kSec) {
  Outcome o;
  o.decision.allowed = true;
  o.decision.remaining = remaining;
  o.decision.reset_after_ns = reset_ns;
  return o;
}
Outcome denied(int64_t remaining, int64_t retry_ns, int64_t reset_ns = 10 * kSec) {
  Outcome o;
  o.decision.allowed = false;
  o.decision.remaining = remaining;
  o.decision.retry_after_ns = retry_ns;
  o.decision.reset_after_ns = reset_ns;
  return o;
}

// The slices (takes) and charges a stream's work asks, in order (its holders' leases apart).
std::vector<const Request*> asked(const RlqsWork& w) {
  std::vector<const Request*> out;
  for (size_t i = 0; i < w.items.size(); ++i) {
    if (w.items[i].what != RlqsWork::What::kCount) out.push_back(&w.requests[i]);
  }
  return out;
}

// `w` settled with `given` for its slices and charges, in order; each lease among a
// counter's holders answered with `held` of them, cluster-wide.
void settle(Quota& q, RlqsStream& s, RlqsWork& w, rlqs_pb::RateLimitQuotaResponse& out,
            std::vector<Outcome> given, int64_t held = 1) {
  std::vector<Outcome> all;
  size_t next = 0;
  for (const RlqsWork::Item& item : w.items) {
    if (item.what == RlqsWork::What::kCount) {
      Outcome o;
      o.acquire.granted = true;
      o.acquire.held = held;
      all.push_back(o);
    } else {
      all.push_back(given.at(next++));
    }
  }
  ASSERT_EQ(next, given.size());
  q.quota->settle(s, w, all.data(), q.clock.now_ns(), out);
}

TEST(Rlqs, BucketRulesLoadAndMatchAsWritten) {
  Quota q;
  const RlsConfig& cfg = *q.rules->get();
  std::vector<RlsEntry> e{{"tenant", "acme"}, {"name", "api"}};
  std::string key;
  const RlqsBucketRule* r = cfg.match_bucket("gw", e, key);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(key, "api:acme");
  EXPECT_EQ(r->limit.policy, "gw");
  e = {{"name", "fixed"}};
  r = cfg.match_bucket("gw", e, key);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(key, "rlqs:gw_name_fixed_60");  // the default key
  e = {{"name", "api"}};                    // fewer entries than the rule: no match
  EXPECT_EQ(cfg.match_bucket("gw", e, key), nullptr);
  e = {{"name", "fixed"}, {"x", "y"}};  // more: none either
  EXPECT_EQ(cfg.match_bucket("gw", e, key), nullptr);
  EXPECT_EQ(cfg.match_bucket("other", e, key), nullptr);
  auto lines = cfg.describe();
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "gw bucket {name: api, tenant: *} key=api:{tenant} policy=gw"),
            lines.end());
}

TEST(Rlqs, BucketRulesRefusedWithAReason) {
  RlsStatsBook book;
  auto refused = [&](const std::string& yaml, const std::string& words) {
    RlsConfig cfg;
    const Status st = load_rls_yaml(cfg, "f.yaml", yaml, book);
    ASSERT_FALSE(st.ok()) << yaml;
    EXPECT_NE(st.error().find(words), std::string::npos) << st.error();
  };
  refused("domain: d\nbuckets:\n  - policy: p\n", "needs a `bucket`");
  refused("domain: d\nbuckets:\n  - bucket: {a: b}\n", "needs a policy or a rate_limit");
  refused("domain: d\nbuckets:\n  - bucket: {a: b}\n    policy: p\n    descriptors: []\n",
          "unknown key 'descriptors'");
  refused("domain: d\nbuckets:\n  - bucket: {a: b}\n    key: \"x:{c}\"\n    policy: p\n",
          "names no entry of its bucket ('c')");
  refused(
      "domain: d\nbuckets:\n  - bucket: {a: b}\n    policy: p\n"
      "    rate_limit: {unit: second, requests_per_unit: 1}\n",
      "both a rate_limit and a policy");
  refused("domain: d\nbuckets:\n  - bucket: {a: b}\n    rate_limit: {unit: fortnight}\n",
          "invalid rate limit unit 'fortnight'");
}

TEST(Rlqs, ABucketGetsASliceTakenFromItsCounterAsATokenBucket) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(q.quota
                  ->report(s,
                           report_map("gw", {usage({{"name", "api"}, {"tenant", "acme"}}, 0, 0)}),
                           q.clock.now_ns(), out)
                  .ok());
  EXPECT_EQ(s.domain, "gw");
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->verb, Verb::kTake);
  EXPECT_EQ(asked(w)[0]->key, "api:acme");
  EXPECT_EQ(asked(w)[0]->cost, 10);  // its share of the policy's rate over one slice (10/s)
  EXPECT_EQ(asked(w)[0]->metric, kRlqsCommandId);
  // (nothing more is due while it is out)
  RlqsWork again;
  q.quota->due(s, q.clock.now_ns(), again, out);
  EXPECT_TRUE(again.empty());
  settle(q, s, w, out, {granted(90)});
  ASSERT_EQ(out.bucket_action_size(), 1);
  const auto& a = out.bucket_action(0);
  EXPECT_EQ(a.bucket_id().bucket().at("tenant"), "acme");
  const auto& tb = a.quota_assignment_action().rate_limit_strategy().token_bucket();
  EXPECT_EQ(tb.max_tokens(), 10u);
  EXPECT_EQ(tb.tokens_per_fill().value(), 1u);
  EXPECT_GE(tb.fill_interval().seconds(), 3600);  // (does not refill within its life)
  EXPECT_EQ(a.quota_assignment_action().assignment_time_to_live().seconds(), 1);
  EXPECT_EQ(a.quota_assignment_action().assignment_time_to_live().nanos(), 500'000'000);
  const std::string first_name = tb.name();
  // Spent: its next slice, sized by what it asked for meanwhile.
  out.Clear();
  q.clock.advance_ns(kSec);
  ASSERT_TRUE(q.quota
                  ->report(s, report_map("", {usage({{"name", "api"}, {"tenant", "acme"}}, 10, 2)}),
                           q.clock.now_ns(), out)
                  .ok());
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->cost, 19);  // 12/s seen, half as much again, and one
  // A new slice is a new strategy (its name): the gateway starts a fresh bucket with it.
  settle(q, s, w, out, {granted(80)});
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_NE(
      out.bucket_action(0).quota_assignment_action().rate_limit_strategy().token_bucket().name(),
      first_name);
}

TEST(Rlqs, BothEncodingsOfAReportAreOneBucket) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(
      q.quota
          ->report(s, report_list("gw", {usage({{"name", "fixed"}}, 3, 1)}), q.clock.now_ns(), out)
          .ok());
  ASSERT_TRUE(
      q.quota
          ->report(s, report_map("gw", {usage({{"name", "fixed"}}, 2, 0)}), q.clock.now_ns(), out)
          .ok());
  ASSERT_EQ(s.holders.size(), 1u);
  EXPECT_EQ(s.holders.begin()->second.reported, 5);
  // A map entry whose key is 0 (no field 1 on the wire) is read as an entry too.
  rlqs_pb::RateLimitQuotaUsageReports r;
  (*r.mutable_bucket_quota_usages())[0] = usage({{"name", "fixed"}}, 1, 0);
  ASSERT_TRUE(q.quota->report(s, r.SerializeAsString(), q.clock.now_ns(), out).ok());
  EXPECT_EQ(s.holders.begin()->second.reported, 6);
  // Bad input ends the stream with a reason.
  RlqsStream t;
  EXPECT_EQ(q.quota->report(t, "\xff\xff", q.clock.now_ns(), out).code,
            RlsStatusCode::kInvalidArgument);
  EXPECT_EQ(q.quota->report(t, report_map("", {}), q.clock.now_ns(), out).code,
            RlsStatusCode::kInvalidArgument);  // the first report names no domain
  rlqs_pb::RateLimitQuotaUsageReports no_id;
  no_id.set_domain("gw");
  (*no_id.mutable_bucket_quota_usages())[1].set_num_requests_allowed(1);
  EXPECT_EQ(q.quota->report(t, no_id.SerializeAsString(), q.clock.now_ns(), out).code,
            RlsStatusCode::kInvalidArgument);
}

TEST(Rlqs, RequestsReportedBeyondTheSlicesAreCharged) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  // 25 let through before any slice (the gateway's no_assignment_behavior): charged.
  ASSERT_TRUE(
      q.quota
          ->report(s, report_map("gw", {usage({{"name", "fixed"}}, 25, 0)}), q.clock.now_ns(), out)
          .ok());
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 2u);
  EXPECT_EQ(asked(w)[0]->verb, Verb::kAdjust);
  EXPECT_EQ(asked(w)[0]->cost, 25);
  EXPECT_EQ(asked(w)[1]->verb, Verb::kTake);
  settle(q, s, w, out, {granted(30), granted(20, 30 * kSec)});
  EXPECT_EQ(q.rules->stats().rlqs_charged.load(), 25u);
  // What it spends of its slice is not charged again.
  const int64_t slice = s.holders.begin()->second.slice;
  ASSERT_GT(slice, 0);
  q.clock.advance_ns(kSec);
  ASSERT_TRUE(q.quota
                  ->report(s, report_map("gw", {usage({{"name", "fixed"}}, slice, 0)}),
                           q.clock.now_ns(), out)
                  .ok());
  q.quota->due(s, q.clock.now_ns(), w, out);
  for (const Request* r : asked(w)) EXPECT_NE(r->verb, Verb::kAdjust);
}

TEST(Rlqs, ACounterWithNothingLeftIsDenyAllUntilATokenIsBack) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(q.quota
                  ->report(s, report_map("gw", {usage({{"name", "api"}, {"tenant", "x"}}, 0, 50)}),
                           q.clock.now_ns(), out)
                  .ok());
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  // Less left than asked: the rest, at once.
  settle(q, s, w, out, {denied(3, 100'000'000)});
  EXPECT_EQ(out.bucket_action_size(), 0);
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->cost, 3);
  settle(q, s, w, out, {denied(0, 300'000'000)});
  ASSERT_EQ(out.bucket_action_size(), 1);
  const auto& a = out.bucket_action(0).quota_assignment_action();
  EXPECT_EQ(a.rate_limit_strategy().blanket_rule(), Strategy::DENY_ALL);
  EXPECT_EQ(a.assignment_time_to_live().nanos(), 300'000'000);
  EXPECT_EQ(RlqsQuota::next_due(s), q.clock.now_ns() + 300'000'000);
}

TEST(Rlqs, AWindowsSliceEndsWithItsWindow) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(
      q.quota
          ->report(s, report_map("gw", {usage({{"name", "fixed"}}, 0, 0)}), q.clock.now_ns(), out)
          .ok());
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  settle(q, s, w, out, {granted(50, 200'000'000)});  // the window ends in 200 ms
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_EQ(out.bucket_action(0).quota_assignment_action().assignment_time_to_live().nanos(),
            200'000'000);
  EXPECT_EQ(RlqsQuota::next_due(s), q.clock.now_ns() + 200'000'000);
}

TEST(Rlqs, UnknownUnslicableAndUnlimitedBuckets) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(q.quota
                  ->report(s,
                           report_map("gw", {usage({{"name", "nope"}}, 0, 0),
                                             usage({{"name", "exact"}}, 0, 0),
                                             usage({{"name", "open"}}, 0, 0)}),
                           q.clock.now_ns(), out)
                  .ok());
  // Not configured, and a sliding log (a slice cannot keep its exactness): abandoned.
  ASSERT_EQ(out.bucket_action_size(), 2);
  EXPECT_TRUE(out.bucket_action(0).has_abandon_action());
  EXPECT_TRUE(out.bucket_action(1).has_abandon_action());
  out.Clear();
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  EXPECT_TRUE(w.empty());  // unlimited: nothing to take
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_EQ(out.bucket_action(0).quota_assignment_action().rate_limit_strategy().blanket_rule(),
            Strategy::ALLOW_ALL);
  EXPECT_FALSE(out.bucket_action(0).quota_assignment_action().has_assignment_time_to_live());
}

TEST(Rlqs, APolicyChangeIsASliceNowAndANewHolderShrinksTheOthers) {
  Quota q;
  RlqsStream s1, s2;
  rlqs_pb::RateLimitQuotaResponse out;
  const auto api = [] { return usage({{"name", "api"}, {"tenant", "t"}}, 0, 0); };
  ASSERT_TRUE(q.quota->report(s1, report_map("gw", {api()}), q.clock.now_ns(), out).ok());
  RlqsWork w;
  q.quota->due(s1, q.clock.now_ns(), w, out);
  settle(q, s1, w, out, {granted(90)});
  EXPECT_EQ(s1.holders.begin()->second.slice, 10);
  // Another stream holds the same counter: the first one's share halves at once.
  ASSERT_TRUE(q.quota->report(s2, report_map("gw", {api()}), q.clock.now_ns(), out).ok());
  q.quota->due(s1, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->cost, 5);
  settle(q, s1, w, out, {granted(85)});
  // The policy changes: a slice now, sized by the new limit.
  q.policies.replace(PolicyMap{{"gw", LimitSpec::token_bucket(1000, 100, kSec)},
                               {"exact", LimitSpec::window(Kind::kSlidingLog, 10, kSec)}});
  q.quota->due(s1, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->spec.a, 1000);
  EXPECT_EQ(asked(w)[0]->cost, 50);  // 100/s over one second, between two holders
  // A gone stream's holders leave the count.
  q.quota->forget(s2);
}

TEST(Rlqs, HoldersOnOtherNodesShrinkTheShare) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  ASSERT_TRUE(q.quota
                  ->report(s, report_map("gw", {usage({{"name", "api"}, {"tenant", "t"}}, 0, 0)}),
                           q.clock.now_ns(), out)
                  .ok());
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  // Its lease among the counter's holders, taken as the node's own (no user), a period long.
  ASSERT_EQ(w.items.size(), 2u);
  const Request& lease = w.requests[0].verb == Verb::kAcquire ? w.requests[0] : w.requests[1];
  EXPECT_EQ(lease.verb, Verb::kAcquire);
  EXPECT_EQ(lease.key, rlqs_holders_key("api:t"));
  EXPECT_EQ(lease.asker, nullptr);
  EXPECT_EQ(lease.spec.c, kSec + kSec / 20);
  EXPECT_EQ(asked(w)[0]->cost, 10);  // alone, as far as it knows
  // Four holders cluster-wide: its share shrinks now, not at the period's end.
  settle(q, s, w, out, {granted(90)}, 4);
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->cost, 3);  // 10/s over one second, among four
}

TEST(Rlqs, ASliceNotYetSpentIsExtendedAndASpentOneReplaced) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  const auto api = [](uint64_t allowed, uint64_t denied) {
    return usage({{"name", "api"}, {"tenant", "t"}}, allowed, denied, 200);
  };
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {api(0, 0)}), q.clock.now_ns(), out).ok());
  // 2 asked in a report of 200 ms: 10 a second, so a slice of 16.
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {api(0, 2)}), q.clock.now_ns(), out).ok());
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->cost, 16);
  settle(q, s, w, out, {granted(90)});
  ASSERT_EQ(out.bucket_action_size(), 1);
  const std::string name =
      out.bucket_action(0).quota_assignment_action().rate_limit_strategy().token_bucket().name();
  // A period on, 4 of its 16 spent: the same strategy again, a new time to live, no take.
  out.Clear();
  q.clock.advance_ns(kSec);
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {api(4, 0)}), q.clock.now_ns(), out).ok());
  q.quota->due(s, q.clock.now_ns(), w, out);
  EXPECT_TRUE(asked(w).empty());
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_EQ(
      out.bucket_action(0).quota_assignment_action().rate_limit_strategy().token_bucket().name(),
      name);
  EXPECT_EQ(out.bucket_action(0).quota_assignment_action().assignment_time_to_live().seconds(), 1);
  settle(q, s, w, out, {});  // (its lease among the counter's holders, once a period)
  // Spent by its next report (8 more, then 4): the next slice at once, a new strategy.
  out.Clear();
  q.clock.advance_ns(200'000'000);
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {api(8, 0)}), q.clock.now_ns(), out).ok());
  q.quota->due(s, q.clock.now_ns(), w, out);
  EXPECT_TRUE(asked(w).empty());  // (4 left: it spends them first)
  q.clock.advance_ns(200'000'000);
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {api(4, 3)}), q.clock.now_ns(), out).ok());
  q.quota->due(s, q.clock.now_ns(), w, out);
  ASSERT_EQ(asked(w).size(), 1u);
  EXPECT_EQ(asked(w)[0]->verb, Verb::kTake);
}

TEST(Rlqs, WhatAGatewayCanMakeTheNodeHoldIsBounded) {
  Quota q;
  RlqsOptions o;
  o.max_keys_per_domain = 2;
  o.max_buckets = 3;
  RlqsQuota quota(q.svc, *q.rules, o);
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  // Tenants are the gateway's to choose: the third counter of the domain makes room by
  // forgetting the caller's least recently used, which the next work resets (rls_keys.hpp).
  s.caller = "10.0.0.1";
  ASSERT_TRUE(quota
                  .report(s,
                          report_map("gw", {usage({{"name", "api"}, {"tenant", "a"}}, 0, 0),
                                            usage({{"name", "api"}, {"tenant", "b"}}, 0, 0),
                                            usage({{"name", "api"}, {"tenant", "c"}}, 0, 0)}),
                          q.clock.now_ns(), out)
                  .ok());
  EXPECT_EQ(s.holders.size(), 3u);
  EXPECT_EQ(out.bucket_action_size(), 0);
  EXPECT_EQ(q.rules->stats().keys_refused.load(), 0u);
  EXPECT_EQ(q.rules->stats().keys_evicted.load(), 1u);
  RlqsWork work;
  quota.due(s, q.clock.now_ns(), work, out);
  size_t resets = 0;
  for (const auto& item : work.items) resets += item.what == RlqsWork::What::kReset ? 1 : 0;
  EXPECT_GE(resets, 1u);
  // Buckets of every stream: past the node's cap (3, held by s) a stream ends
  // RESOURCE_EXHAUSTED.
  RlqsStream t;
  EXPECT_EQ(
      quota.report(t, report_map("gw", {usage({{"name", "fixed"}}, 0, 0)}), q.clock.now_ns(), out)
          .code,
      RlsStatusCode::kResourceExhausted);
  // A gone stream gives its buckets back.
  quota.forget(s);
  EXPECT_TRUE(
      quota.report(t, report_map("gw", {usage({{"name", "open"}}, 0, 0)}), q.clock.now_ns(), out)
          .ok());
}

TEST(Rlqs, SliceSizes) {
  // No demand known: the first slice as given; never more than the share or what is left.
  EXPECT_EQ(rlqs_slice_size(25, -1, -1, kSec, 10), 10);
  EXPECT_EQ(rlqs_slice_size(5, -1, -1, kSec, 10), 5);
  EXPECT_EQ(rlqs_slice_size(25, 3, -1, kSec, 10), 3);
  EXPECT_EQ(rlqs_slice_size(25, 0, -1, kSec, 10), 1);  // (never 0: the take says DENY)
  // Known demand: 1.5 times a slice's worth of it, plus one.
  EXPECT_EQ(rlqs_slice_size(1000, -1, 10, kSec, 5), 16);
  EXPECT_EQ(rlqs_slice_size(1000, -1, 0, kSec, 5), 1);
  EXPECT_EQ(rlqs_slice_size(1000, 400, 1e30, kSec, 5), 400);
}

}  // namespace
}  // namespace fg
