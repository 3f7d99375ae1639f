// Policies, key patterns and overrides: which limit a key gets, definitions as text, and
// how a config file reload changes the book.
#include "policy_store.hpp"

#include <gtest/gtest.h>

#include "clock.hpp"

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
  ASSERT_EQ(f.store.set_policy("free", LimitSpec::window(Kind::kSlidingLog, 100, 60'000'000'000)),
            "");
  ASSERT_EQ(f.store.set_policy("pro", LimitSpec::window(Kind::kSlidingLog, 900, 60'000'000'000)),
            "");
  ASSERT_EQ(f.store.map_pattern("user:*", "free"), "");
  ASSERT_EQ(f.store.map_pattern("user:pro:*", "pro"), "");
  PolicyOverride o;
  o.spec = LimitSpec::window(Kind::kFixedWindow, 5, 1'000'000'000);
  ASSERT_EQ(f.store.set_override("user:pro:7", o), "");
  auto set = f.registry.snapshot();
  std::string error;
  EXPECT_EQ(set->lookup("user:1", "", error)->a, 100);
  EXPECT_EQ(set->lookup("user:pro:1", "", error)->a, 900);  // more literal characters
  EXPECT_EQ(set->lookup("user:pro:7", "", error)->a, 5);    // the override
  EXPECT_EQ(set->lookup("user:pro:7", "free", error)->a, 5);
  EXPECT_EQ(set->lookup("user:1", "pro", error)->a, 900);  // named wins over pattern
  EXPECT_EQ(set->lookup("other", "", error), nullptr);
  EXPECT_NE(error.find("no policy applies"), std::string::npos);
  EXPECT_EQ(set->lookup("user:1", "nope", error), nullptr);
  EXPECT_EQ(error, "ERR unknown policy 'nope'");
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
  LimitSpec back;
  std::string error;
  ASSERT_TRUE(parse_definition(words, 0, back, error)) << error;
  EXPECT_EQ(policy_definition(back), text);
  EXPECT_NE(check_policy_name("cost"), "");
  EXPECT_NE(check_policy_name("sliding_log"), "");
  EXPECT_NE(check_policy_name("a b"), "");
  EXPECT_EQ(check_policy_name("plan:free-2"), "");
}

TEST(PolicyStore, AReloadWritesOnlyWhatTheFileChanged) {
  Fixture f;
  PolicyFile file;
  file.policies["a"] = LimitSpec::window(Kind::kSlidingLog, 1, 60'000'000'000);
  file.policies["b"] = LimitSpec::window(Kind::kSlidingLog, 2, 60'000'000'000);
  f.store.load_file(file, 1000);  // an old file: its version is its mtime
  // A runtime change after the file was written wins over it.
  ASSERT_EQ(f.store.set_policy("b", LimitSpec::window(Kind::kSlidingLog, 22, 60'000'000'000)), "");
  file.policies["a"].a = 11;   // changed in the file
  file.policies.erase("b");    // dropped from the file
  file.patterns["k:*"] = "a";  // added
  EXPECT_EQ(f.store.reload_file(file), 3u);
  auto set = f.registry.snapshot();
  EXPECT_EQ(set->policies.at("a").a, 11);
  EXPECT_EQ(set->policies.count("b"), 0u);
  std::string error;
  EXPECT_EQ(set->lookup("k:1", "", error)->a, 11);
  EXPECT_EQ(f.store.reload_file(file), 0u);  // unchanged file: nothing written
}

}  // namespace
}  // namespace fg
