// The quota service (RLQS) without gRPC: bucket rules, both encodings of a report, and the
// shares a stream's buckets get — split by demand through the counter's table, assigned as
// token buckets Envoy keeps, charged within what a gateway could have admitted, abandoned —
// with the core's outcomes made by hand (Cluster).
#include "rlqs.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <map>

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

// The cluster as the quota service's work sees it: counters' demand tables (hashes) and the
// charges, answered as the request core would (or TRYAGAIN for all, when `down`).
struct Cluster {
  std::map<std::string, std::map<std::string, std::string>> tables;
  std::vector<std::pair<std::string, int64_t>> charges;
  std::deque<DataReply> replies;
  bool down = false;

  std::vector<Outcome> answer(const RlqsWork& w) {
    std::vector<Outcome> out;
    for (const Request& r : w.requests) {
      Outcome o;
      if (down) {
        o.code = Code::kTryAgain;
        out.push_back(o);
        continue;
      }
      if (r.verb == Verb::kAdjust) {
        charges.emplace_back(std::string(r.key), r.cost);
        o.decision.allowed = true;
      } else if (r.verb == Verb::kData) {
        const auto& a = *r.args;
        DataReply& reply = replies.emplace_back();
        auto& t = tables[std::string(a[1])];
        if (r.data == DataCmd::kHSet) {
          t[std::string(a[2])] = std::string(a[3]);
          reply.integer(1);
        } else if (r.data == DataCmd::kHDel) {
          int64_t n = 0;
          for (size_t i = 2; i < a.size(); ++i)
            n += static_cast<int64_t>(t.erase(std::string(a[i])));
          reply.integer(n);
        } else if (r.data == DataCmd::kHGetAll) {
          reply.array(2 * static_cast<int64_t>(t.size()));
          for (const auto& [f, v] : t) {
            reply.bulk(f);
            reply.bulk(v);
          }
        } else {
          reply.integer(1);
        }
        o.reply = &reply;
      }
      out.push_back(o);
    }
    return out;
  }
};

// One look of the stream's holders: their work answered by the cluster, the assignments out.
rlqs_pb::RateLimitQuotaResponse look(Quota& q, RlqsStream& s, Cluster& c) {
  rlqs_pb::RateLimitQuotaResponse out;
  RlqsWork w;
  q.quota->due(s, q.clock.now_ns(), w, out);
  if (!w.empty()) {
    std::vector<Outcome> o = c.answer(w);
    q.quota->settle(s, w, o.data(), q.clock.now_ns(), out);
  }
  return out;
}

// A stream's report of `allowed` and `denied` requests of one bucket over `elapsed_ms`.
void reports(Quota& q, RlqsStream& s, std::vector<std::pair<std::string, std::string>> id,
             uint64_t allowed, uint64_t denied, int64_t elapsed_ms,
             rlqs_pb::RateLimitQuotaResponse* out = nullptr) {
  rlqs_pb::RateLimitQuotaResponse ignored;
  const RlsStatus st =
      q.quota->report(s, report_map("gw", {usage(id, allowed, denied, elapsed_ms)}),
                      q.clock.now_ns(), out ? *out : ignored);
  ASSERT_TRUE(st.ok()) << st.message;
}

// The token bucket an action assigns: its rate as Envoy's filter reads it (tokens per fill
// over the fill interval's whole seconds).
double rate_of(const rlqs_pb::RateLimitQuotaResponse::BucketAction& a) {
  const auto& tb = a.quota_assignment_action().rate_limit_strategy().token_bucket();
  return static_cast<double>(tb.tokens_per_fill().value()) /
         static_cast<double>(tb.fill_interval().seconds());
}
uint32_t burst_of(const rlqs_pb::RateLimitQuotaResponse::BucketAction& a) {
  return a.quota_assignment_action().rate_limit_strategy().token_bucket().max_tokens();
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

// A bucket's share of its counter's rate, as a refilling token bucket Envoy keeps: its
// holder writes its demand to the counter's table and reads the table; alone, it gets the
// whole rate; the time to live is whole seconds and outlives two of Envoy's 5 s reports.
TEST(Rlqs, ABucketGetsItsShareOfTheRateAsATokenBucket) {
  Quota q;
  Cluster c;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  reports(q, s, {{"name", "api"}, {"tenant", "acme"}}, 1, 0, 0);
  EXPECT_EQ(s.domain, "gw");
  out = look(q, s, c);
  ASSERT_EQ(out.bucket_action_size(), 1);
  const auto& a = out.bucket_action(0);
  EXPECT_EQ(a.bucket_id().bucket().at("tenant"), "acme");
  const auto& q1 = a.quota_assignment_action();
  ASSERT_TRUE(q1.rate_limit_strategy().has_token_bucket());
  // (policy gw: a bucket of 100, 10 a second)
  EXPECT_DOUBLE_EQ(rate_of(a), 10);
  EXPECT_EQ(burst_of(a), 100u);
  EXPECT_EQ(q1.rate_limit_strategy().token_bucket().fill_interval().nanos(), 0);
  EXPECT_EQ(q1.assignment_time_to_live().seconds(), kRlqsTtlSeconds);
  EXPECT_EQ(q1.assignment_time_to_live().nanos(), 0);
  EXPECT_GT(kRlqsTtlSeconds * 1'000'000'000, 2 * kEnvoyReportNs);
  ASSERT_EQ(c.tables.count("rlqs-demand:api:acme"), 1u);
  EXPECT_EQ(c.tables["rlqs-demand:api:acme"].size(), 1u);
  // The next period: the same share, nothing sent (Envoy keeps its bucket); then, with less
  // than kRlqsRefreshNs of its life left, the same bucket again: its time to live renewed.
  q.clock.advance_ns(kSec);
  EXPECT_EQ(look(q, s, c).bucket_action_size(), 0);
  q.clock.advance_ns(5 * kSec);
  out = look(q, s, c);
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_DOUBLE_EQ(rate_of(out.bucket_action(0)), 10);
}

TEST(Rlqs, BothEncodingsOfAReportAreOneBucket) {
  Quota q;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  const auto id =
      std::vector<std::pair<std::string, std::string>>{{"name", "api"}, {"tenant", "t"}};
  ASSERT_TRUE(q.quota->report(s, report_map("gw", {usage(id, 3, 0)}), q.clock.now_ns(), out).ok());
  ASSERT_TRUE(q.quota->report(s, report_list("gw", {usage(id, 4, 0)}), q.clock.now_ns(), out).ok());
  EXPECT_EQ(s.holders.size(), 1u);
  EXPECT_EQ(s.holders.begin()->second.reported, 7);
  EXPECT_FALSE(
      q.quota->report(s, std::string("\x0a\x03gw\x12\x02\x08\x01"), q.clock.now_ns(), out).ok());
}

// Gateways on one counter split its rate by what they report they were asked for: two heavy
// and eight light, the light get what they ask for (and a tenth), the heavy the rest;
// the shares sum to the rate. One that reports asking for nothing gets almost nothing — two
// hundred idle subscribers do not cut a real gateway's share.
TEST(Rlqs, SharesFollowDemandAndSumToTheRate) {
  EXPECT_NEAR(rlqs_share(100, {-1, -1, -1, -1}, 0), 25, 1e-9);
  std::vector<double> d = {100, 100, 2, 2, 2, 2, 2, 2, 2, 2};
  double sum = 0;
  for (size_t i = 0; i < d.size(); ++i) sum += rlqs_share(50, d, i);
  EXPECT_NEAR(sum, 50, 1e-9);
  EXPECT_NEAR(rlqs_share(50, d, 2), 2.2, 1e-9);
  EXPECT_NEAR(rlqs_share(50, d, 0), (50 - 8 * 2.2) / 2.0, 1e-9);
  std::vector<double> idle(201, 0);
  idle[0] = 100;
  EXPECT_NEAR(rlqs_share(100, idle, 0), 100, 1e-9);
  EXPECT_LT(rlqs_share(100, idle, 1), 1e-9);
  // Written as Envoy reads it: tokens per 10 s, rounded down; the least, one a minute.
  EXPECT_DOUBLE_EQ(rlqs_bucket(4.77, 1).rate(), 4.7);
  EXPECT_EQ(rlqs_bucket(4.77, 1).fill_seconds, 10);
  EXPECT_EQ(rlqs_bucket(0, 0).max_tokens, 1);
  EXPECT_EQ(rlqs_bucket(0, 0).fill_seconds, 60);
  EXPECT_EQ(rlqs_bucket(0.05, 1).fill_seconds, 20);
}

// Two streams (two gateways) on one counter through the table: after their reports, the heavy
// one gets most of the rate and the light one what it asks for, and a tenth; once the
// light one leaves, its field goes stale and the heavy one gets the whole rate.
TEST(Rlqs, HoldersOnOtherStreamsAndNodesShareThroughTheTable) {
  Quota q;
  Cluster c;
  RlqsStream heavy, light;
  const auto id =
      std::vector<std::pair<std::string, std::string>>{{"name", "api"}, {"tenant", "x"}};
  reports(q, heavy, id, 1, 0, 0);
  reports(q, light, id, 1, 0, 0);
  look(q, heavy, c);
  look(q, light, c);
  q.clock.advance_ns(5 * kSec);
  reports(q, heavy, id, 40, 160, 5000);  // (asked for 40 a second)
  reports(q, light, id, 5, 0, 5000);     // (1 a second)
  auto h = look(q, heavy, c);
  auto l = look(q, light, c);
  q.clock.advance_ns(kSec);
  h = look(q, heavy, c);  // (the next period: the light one's demand in the table)
  ASSERT_EQ(l.bucket_action_size(), 1);
  EXPECT_NEAR(rate_of(l.bucket_action(0)), 1.1, 0.1);
  ASSERT_EQ(h.bucket_action_size(), 1);
  EXPECT_NEAR(rate_of(h.bucket_action(0)), 8.9, 0.1);
  EXPECT_EQ(burst_of(h.bucket_action(0)), 89u);  // (its part of the capacity, 100)
  q.quota->forget(light);
  for (int i = 0; i < 8; ++i) {
    q.clock.advance_ns(kSec);
    reports(q, heavy, id, 40, 0, 1000);
    const auto out = look(q, heavy, c);
    if (out.bucket_action_size() > 0) h = out;
  }
  EXPECT_EQ(c.tables["rlqs-demand:api:x"].size(), 1u);  // (the stale field pruned)
  ASSERT_EQ(h.bucket_action_size(), 1);
  EXPECT_NEAR(rate_of(h.bucket_action(0)), 10, 0.1);
}

// What a gateway reports it admitted is charged to the counter — no more than it could have
// admitted (its bucket's rate over the time it reports, and its burst), no more than one
// period's worth at once: a report claiming 2^62 does not put the counter in debt for years.
TEST(Rlqs, ChargesAreBoundedByWhatTheStreamCouldHaveAdmitted) {
  Quota q;
  Cluster c;
  RlqsStream s;
  const auto id =
      std::vector<std::pair<std::string, std::string>>{{"name", "api"}, {"tenant", "c"}};
  reports(q, s, id, 1, 0, 0);
  look(q, s, c);  // (10 a second, a burst of 100)
  ASSERT_EQ(c.charges.size(), 1u);
  EXPECT_EQ(c.charges[0].second, 1);
  q.clock.advance_ns(5 * kSec);
  reports(q, s, id, 30, 0, 5000);
  look(q, s, c);
  ASSERT_EQ(c.charges.size(), 2u);
  EXPECT_EQ(c.charges[1], std::make_pair(std::string("api:c"), int64_t{30}));
  q.clock.advance_ns(5 * kSec);
  reports(q, s, id, uint64_t{1} << 62, 0, 5000);
  int64_t charged = 0;
  for (int i = 0; i < 5; ++i) {
    look(q, s, c);
    q.clock.advance_ns(kSec);
  }
  for (size_t i = 2; i < c.charges.size(); ++i) {
    EXPECT_LE(c.charges[i].second, 100);  // (a period's worth: the capacity)
    charged += c.charges[i].second;
  }
  EXPECT_LE(charged, 10 * 5 + 100 + 2);  // (its rate over 5 s, its burst)
}

// The counter's table out of reach: the share in force stays at the gateway (its time to
// live renewed while it runs out), never its no-assignment rule; tried again shortly.
TEST(Rlqs, WithTheTableOutOfReachTheShareInForceStays) {
  Quota q;
  Cluster c;
  RlqsStream s;
  const auto id =
      std::vector<std::pair<std::string, std::string>>{{"name", "api"}, {"tenant", "u"}};
  reports(q, s, id, 1, 0, 0);
  ASSERT_EQ(look(q, s, c).bucket_action_size(), 1);
  c.down = true;
  int renewed = 0;
  for (int i = 0; i < 40; ++i) {  // (10 s)
    q.clock.advance_ns(kSec / 4);
    const auto out = look(q, s, c);
    for (const auto& a : out.bucket_action()) {
      EXPECT_DOUBLE_EQ(rate_of(a), 10);
      ++renewed;
    }
  }
  EXPECT_GE(renewed, 1);
}

TEST(Rlqs, UnknownUnsharableAndUnlimitedBuckets) {
  Quota q;
  Cluster c;
  RlqsStream s;
  rlqs_pb::RateLimitQuotaResponse out;
  reports(q, s, {{"name", "nope"}}, 1, 0, 0, &out);
  reports(q, s, {{"name", "exact"}}, 1, 0, 0, &out);
  ASSERT_EQ(out.bucket_action_size(), 2);
  EXPECT_TRUE(out.bucket_action(0).has_abandon_action());
  EXPECT_TRUE(out.bucket_action(1).has_abandon_action());
  reports(q, s, {{"name", "open"}}, 1, 0, 0);
  out = look(q, s, c);
  ASSERT_EQ(out.bucket_action_size(), 1);
  const auto& qa = out.bucket_action(0).quota_assignment_action();
  EXPECT_EQ(qa.rate_limit_strategy().blanket_rule(), Strategy::ALLOW_ALL);
  EXPECT_EQ(qa.assignment_time_to_live().seconds(), kRlqsTtlSeconds);  // (0 would expire at once)
}

// A fixed window of 60 a minute: a rate of 1 a second, a burst of one token (a window's
// burst is a tenth of a second of its rate, at least one).
TEST(Rlqs, AWindowIsItsRateWithASmallBurst) {
  Quota q;
  Cluster c;
  RlqsStream s;
  reports(q, s, {{"name", "fixed"}}, 1, 0, 0);
  const auto out = look(q, s, c);
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_DOUBLE_EQ(rate_of(out.bucket_action(0)), 1);
  EXPECT_EQ(burst_of(out.bucket_action(0)), 1u);
}

// A policy changed: the next look sizes the share by the new limit at once.
TEST(Rlqs, APolicyChangeIsANewShareAtOnce) {
  Quota q;
  Cluster c;
  RlqsStream s;
  reports(q, s, {{"name", "api"}, {"tenant", "p"}}, 1, 0, 0);
  look(q, s, c);
  q.policies.replace(PolicyMap{{"gw", LimitSpec::token_bucket(100, 50, kSec)},
                               {"exact", LimitSpec::window(Kind::kSlidingLog, 10, kSec)}});
  const auto out = look(q, s, c);
  ASSERT_EQ(out.bucket_action_size(), 1);
  EXPECT_DOUBLE_EQ(rate_of(out.bucket_action(0)), 50);
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

}  // namespace
}  // namespace fg
