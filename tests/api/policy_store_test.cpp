// Policies, key patterns and overrides: which limit a key gets, definitions as text, and
// how a config file reload changes the book.
#include "policy_store.hpp"

#include <gtest/gtest.h>

#include "clock.hpp"
#include "errors.hpp"

namespace fg {
namespace {

struct Fixture {
  ManualClock clock{1'700'000'000'000'000'000};
  Book book{"n1"};
  PolicyRegistry registry;
  PolicyStore store{book, registry, clock};
};

TEST(PolicyStore, OverrideThenNamedThenMostSpecificPattern) {
  Fixture f;
  ASSERT_TRUE(
      f.store.set_policy("free", LimitSpec::window(Kind::kSlidingLog, 100, 60'000'000'000)).ok());
  ASSERT_TRUE(
      f.store.set_policy("pro", LimitSpec::window(Kind::kSlidingLog, 900, 60'000'000'000)).ok());
  ASSERT_TRUE(f.store.map_pattern("user:*", "free").ok());
  ASSERT_TRUE(f.store.map_pattern("user:pro:*", "pro").ok());
  PolicyOverride o;
  o.spec = LimitSpec::window(Kind::kFixedWindow, 5, 1'000'000'000);
  ASSERT_TRUE(f.store.set_override("user:pro:7", o).ok());
  auto set = f.registry.snapshot();
  EXPECT_EQ(set->resolve("user:1", "")->a, 100);
  EXPECT_EQ(set->resolve("user:pro:1", "")->a, 900);  // more literal characters
  EXPECT_EQ(set->resolve("user:pro:7", "")->a, 5);    // the override
  EXPECT_EQ(set->resolve("user:pro:7", "free")->a, 5);
  EXPECT_EQ(set->resolve("user:1", "pro")->a, 900);  // named wins over pattern
  EXPECT_EQ(set->resolve("other", "").error(), err::kNoPolicyApplies);
  EXPECT_EQ(set->resolve("user:1", "nope").error(), "ERR unknown policy 'nope'");
  EXPECT_EQ(f.store.map_pattern("x:*", "nope").error(), "ERR unknown policy 'nope'");
  EXPECT_EQ(f.store.del_policy("free").error(),
            "ERR policy 'free' is mapped from pattern 'user:*'; FG.POLICY UNMAP it first");
}

// A set knows whether any pattern or override leads to a synchronous limit (data commands
// look their keys up only then), and follows changes.
TEST(PolicyStore, KnowsWhetherAnyKeyLeadsToSyncReplication) {
  Fixture f;
  LimitSpec strict = LimitSpec::window(Kind::kFixedWindow, 100, 60'000'000'000);
  strict.sync = true;
  ASSERT_TRUE(f.store.set_policy("strict", strict).ok());
  ASSERT_TRUE(
      f.store.set_policy("free", LimitSpec::window(Kind::kSlidingLog, 100, 60'000'000'000)).ok());
  ASSERT_TRUE(f.store.map_pattern("user:*", "free").ok());
  EXPECT_FALSE(f.registry.snapshot()->sync_keys);  // (a sync policy no key is mapped to)
  ASSERT_TRUE(f.store.map_pattern("counted:*", "strict").ok());
  EXPECT_TRUE(f.registry.snapshot()->sync_keys);
  ASSERT_TRUE(f.store.unmap_pattern("counted:*"));
  EXPECT_FALSE(f.registry.snapshot()->sync_keys);
  PolicyOverride o;
  o.spec = strict;
  ASSERT_TRUE(f.store.set_override("user:7", o).ok());
  EXPECT_TRUE(f.registry.snapshot()->sync_keys);
}

TEST(PolicyStore, DefinitionsRoundTrip) {
  LimitSpec s = LimitSpec::token_bucket(120, 120, 60'000'000'000);
  s.sync = true;
  s.on_unavailable = FailMode::kClosed;
  const std::string text = policy_definition(s);
  EXPECT_EQ(text, "token_bucket 120 120 60000 REPLICATION sync ON_UNAVAILABLE fail_closed");
  std::vector<std::string_view> words = {"token_bucket",   "120",         "120",
                                         "60000",          "REPLICATION", "sync",
                                         "ON_UNAVAILABLE", "fail_closed"};
  Result<LimitSpec> back = parse_definition(words, 0);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(policy_definition(back.value()), text);
  // SHADOW is a flag, wherever it stands among the options (kept in the book's text, so every
  // node reads it).
  s.shadow = true;
  EXPECT_EQ(policy_definition(s),
            "token_bucket 120 120 60000 REPLICATION sync ON_UNAVAILABLE fail_closed SHADOW");
  std::vector<std::string_view> shadowed = {"token_bucket", "120",         "120", "60000",
                                            "SHADOW",       "REPLICATION", "sync"};
  Result<LimitSpec> sh = parse_definition(shadowed, 0);
  ASSERT_TRUE(sh.ok()) << sh.error();
  EXPECT_TRUE(sh->shadow);
  EXPECT_TRUE(sh->sync);
  std::vector<std::string_view> conc = {"concurrency", "2", "60000", "SHADOW"};
  EXPECT_EQ(parse_definition(conc, 0).error(), err::kShadowConcurrency);
  EXPECT_EQ(check_policy_name("cost").error(), err::kPolicyNamedLikeWord);
  EXPECT_EQ(check_policy_name("sliding_log").error(), err::kPolicyNamedLikeKind);
  EXPECT_EQ(check_policy_name("a b").error(), err::kPolicyNameChars);
  EXPECT_TRUE(check_policy_name("plan:free-2").ok());
}

TEST(PolicyStore, AReloadWritesOnlyWhatTheFileChanged) {
  Fixture f;
  PolicyFile file;
  file.policies["a"] = LimitSpec::window(Kind::kSlidingLog, 1, 60'000'000'000);
  file.policies["b"] = LimitSpec::window(Kind::kSlidingLog, 2, 60'000'000'000);
  f.store.load_file(file, 1000);  // an old file: its version is its mtime
  // A runtime change after the file was written wins over it.
  ASSERT_TRUE(
      f.store.set_policy("b", LimitSpec::window(Kind::kSlidingLog, 22, 60'000'000'000)).ok());
  file.policies["a"].a = 11;   // changed in the file
  file.policies.erase("b");    // dropped from the file
  file.patterns["k:*"] = "a";  // added
  EXPECT_EQ(f.store.reload_file(file), 3u);
  auto set = f.registry.snapshot();
  EXPECT_EQ(set->policies.at("a").a, 11);
  EXPECT_EQ(set->policies.count("b"), 0u);
  EXPECT_EQ(set->resolve("k:1", "")->a, 11);
  EXPECT_EQ(f.store.reload_file(file), 0u);  // unchanged file: nothing written
}

// A reader's held snapshot is refreshed exactly when the set was replaced since.
TEST(PolicyRegistry, AHeldSnapshotIsRefreshedWhenTheSetChanges) {
  PolicyRegistry r;
  std::shared_ptr<const PolicySet> held;
  uint64_t version = 0;
  r.refresh(held, version);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->policies.empty());
  const PolicySet* first = held.get();
  r.refresh(held, version);
  EXPECT_EQ(held.get(), first);  // unchanged: kept
  r.replace(PolicyMap{{"free", LimitSpec::token_bucket(5, 1, 1'000'000'000)}});
  r.refresh(held, version);
  EXPECT_EQ(held->policies.count("free"), 1u);
  EXPECT_EQ(held.get(), r.snapshot().get());
}

}  // namespace
}  // namespace fg
