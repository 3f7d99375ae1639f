// The gateway door's configuration: envoyproxy/ratelimit's YAML refused where upstream refuses
// it (in its words), and its lookup's rules.
#include "rls_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fg {
namespace {

std::string load_error(const std::string& text, const std::string& name = "f.yaml") {
  RlsStatsBook book;
  RlsConfig cfg;
  Status st = load_rls_yaml(cfg, name, text, book);
  return st.ok() ? "" : st.error();
}

struct Loaded {
  RlsStatsBook book;
  RlsConfig cfg;
  explicit Loaded(const std::string& text) {
    Status st = load_rls_yaml(cfg, "t.yaml", text, book);
    EXPECT_TRUE(st.ok()) << st.error();
  }
  RlsMatch match(std::vector<RlsEntry> e, std::string_view domain = "d") {
    return cfg.match(domain, e, book);
  }
};

TEST(RlsConfig, RefusesWhatUpstreamRefusesInItsWords) {
  EXPECT_EQ(load_error("descriptors: []\n"), "f.yaml: config file cannot have empty domain");
  EXPECT_EQ(load_error(""), "f.yaml: config file cannot have empty domain");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - value: v\n"),
            "f.yaml: descriptor has empty key");
  EXPECT_EQ(
      load_error("domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n"),
      "f.yaml: duplicate descriptor composite key 'd.k_v'");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, "
                       "requests_per_unit: 1}\n"),
            "f.yaml: invalid rate limit unit 'fortnight'");
  EXPECT_EQ(
      load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}\n"),
      "f.yaml: invalid rate limit unit ''");
  EXPECT_EQ(
      load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: "
                 "day}\n"),
      "f.yaml: should not specify rate limit unit when unlimited");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, "
                       "requests_per_unit: 1, name: a, replaces: [{name: a}]}\n"),
            "f.yaml: replaces should not contain name of same descriptor");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, "
                       "requests_per_unit: 1, replaces: [{name: ''}]}\n"),
            "f.yaml: should not have an empty replaces entry");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    ratelimit: {unit: day}\n"),
            "f.yaml: config error, unknown key 'ratelimit'");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, "
                       "requestsperunit: 1}\n"),
            "f.yaml: config error, unknown key 'requestsperunit'");
  EXPECT_EQ(load_error("0.25: d\n"), "f.yaml: config error, key is not of type string: 0.25");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - a\n  - b\n"),
            "f.yaml: config error, yaml file contains list of type other than map: a");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    share_threshold: true\n"),
            "f.yaml: share_threshold can only be used with wildcard values (containing '*'), but "
            "found key 'k'");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, "
                       "requests_per_unit: -1}\n")
                .rfind("f.yaml: error loading config file: cannot unmarshal `-1` into uint32", 0),
            0u);
  EXPECT_EQ(load_error("'''\n").rfind("f.yaml: error loading config file: ", 0), 0u);
  // Units in any case, as upstream reads them.
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: MINUTE, "
                       "requests_per_unit: 1}\n"),
            "");
}

TEST(RlsConfig, ADomainTwiceIsRefusedAcrossFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "fg_rls_config_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << "domain: d\n";
  std::ofstream(dir / "b.yml") << "domain: d\n";
  std::ofstream(dir / "notes.txt") << "not yaml: [\n";
  RlsStatsBook book;
  auto cfg = load_rls_config(dir.string(), book);
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error(), "b.yml: duplicate domain 'd' in config file");
  std::ofstream(dir / "b.yml") << "domain: e\n";
  cfg = load_rls_config(dir.string(), book);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  EXPECT_EQ((*cfg)->files, (std::vector<std::string>{"a.yaml", "b.yml"}));
  std::filesystem::remove_all(dir);
}

TEST(RlsConfig, TheMostSpecificMatchWinsAndAKeyAloneMatchesAnyValue) {
  Loaded l(R"(domain: d
descriptors:
  - key: path
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    value: /login
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: path
    value: /api*
    rate_limit: {unit: hour, requests_per_unit: 7}
)");
  RlsMatch exact = l.match({{"path", "/login"}});
  ASSERT_TRUE(exact.limit);
  EXPECT_EQ(exact.limit->requests_per_unit, 2u);
  EXPECT_EQ(exact.counter, "d_path_/login_");
  RlsMatch wild = l.match({{"path", "/api/v1"}});
  ASSERT_TRUE(wild.limit);
  EXPECT_EQ(wild.limit->requests_per_unit, 7u);
  RlsMatch any = l.match({{"path", "/x"}});
  ASSERT_TRUE(any.limit);
  EXPECT_EQ(any.limit->requests_per_unit, 10u);
  // A key without a value counts each value apart.
  EXPECT_EQ(any.counter, "d_path_/x_");
  EXPECT_EQ(l.match({{"path", "/y"}}).counter, "d_path_/y_");
  EXPECT_FALSE(l.match({{"other", "/x"}}).limit);
  EXPECT_FALSE(l.match({{"path", "/x"}}, "unknown-domain").limit);
}

TEST(RlsConfig, ALimitAppliesOnlyAtTheDepthOfTheRequestsLastEntry) {
  Loaded l(R"(domain: d
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 100}
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: leaf
    rate_limit: {unit: minute, requests_per_unit: 1}
)");
  EXPECT_EQ(l.match({{"tenant", "a"}}).limit->requests_per_unit, 100u);
  EXPECT_EQ(l.match({{"tenant", "a"}, {"plan", "free"}}).limit->requests_per_unit, 5u);
  EXPECT_FALSE(l.match({{"tenant", "a"}, {"plan", "paid"}}).limit);
  // More entries than the tree is deep: nothing.
  EXPECT_FALSE(l.match({{"leaf", "x"}, {"more", "y"}}).limit);
  EXPECT_EQ(l.match({{"tenant", "a"}, {"plan", "free"}}).limit->full_key, "d.tenant.plan_free");
}

TEST(RlsConfig, ShareThresholdCountsEveryMatchingValueOnOneCounter) {
  Loaded l(R"(domain: d
descriptors:
  - key: file
    value: docs/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: img
    value: pics/*
    rate_limit: {unit: minute, requests_per_unit: 3}
)");
  EXPECT_EQ(l.match({{"file", "docs/a.pdf"}}).counter, "d_file_docs/*_");
  EXPECT_EQ(l.match({{"file", "docs/b.pdf"}}).counter, "d_file_docs/*_");
  EXPECT_EQ(l.match({{"img", "pics/a"}}).counter, "d_img_pics/a_");
}

TEST(RlsConfig, DetailedMetricsAreBoundedAndFallBackToTheRule) {
  Loaded l(R"(domain: d
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 3}
)");
  RlsMatch m = l.match({{"user", "u1"}});
  ASSERT_TRUE(m.stats);
  EXPECT_NE(m.stats, m.limit->stats);
  size_t own = 0;
  for (int i = 0; i < static_cast<int>(RlsStatsBook::kMaxKeys) + 50; ++i) {
    RlsMatch x = l.match({{"user", "v" + std::to_string(i)}});
    own += x.stats != x.limit->stats;
  }
  EXPECT_LT(own, RlsStatsBook::kMaxKeys);
  size_t keys = 0;
  l.book.each([&](const std::string&, const std::string&, const RlsStats&) { ++keys; });
  EXPECT_EQ(keys, RlsStatsBook::kMaxKeys);
}

TEST(RlsConfig, PolicyAndFailModeExtensions) {
  Loaded l(R"(domain: d
on_unavailable: fail_open
descriptors:
  - key: api_key
    policy: per-key
)");
  EXPECT_EQ(l.cfg.domain("d")->on_unavailable, FailMode::kOpen);
  EXPECT_EQ(l.match({{"api_key", "k"}}).limit->policy, "per-key");
  EXPECT_EQ(load_error("domain: d\non_unavailable: maybe\n"),
            "f.yaml: on_unavailable must be error or fail_open, not 'maybe'");
  EXPECT_EQ(load_error("domain: d\ndescriptors:\n  - key: k\n    policy: p\n    rate_limit: {unit: "
                       "day, requests_per_unit: 1}\n"),
            "f.yaml: descriptor 'd.k' has both a rate_limit and a policy");
}

TEST(RlsConfig, UnitsAreUpstreams) {
  EXPECT_EQ(rls_unit_seconds(RlsUnit::kMonth), 30 * 86400);
  EXPECT_EQ(rls_unit_seconds(RlsUnit::kYear), 365 * 86400);
  EXPECT_EQ(rls_unit_seconds(RlsUnit::kWeek), 7 * 86400);
  EXPECT_EQ(static_cast<int>(rls_unit_from_name("Week")), 7);
}

}  // namespace
}  // namespace fg
