// Argument parsing: strict integers, lease ids, inline limit specs, glob patterns.
#include "command_util.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(CommandUtil, StrictIntegers) {
  int64_t v;
  EXPECT_TRUE(parse_int("0", v));
  EXPECT_TRUE(parse_int("-12", v));
  EXPECT_EQ(v, -12);
  EXPECT_TRUE(parse_int("9223372036854775807", v));
  for (const char* bad : {"", "+1", "01", "1.5", "1e3", " 1", "1 ", "abc", "9223372036854775808"})
    EXPECT_FALSE(parse_int(bad, v)) << bad;
}

TEST(CommandUtil, LeaseIds) {
  uint64_t id;
  EXPECT_TRUE(parse_lease_id("384bfc3d95e58352", id));
  EXPECT_EQ(id, 0x384bfc3d95e58352ULL);
  EXPECT_FALSE(parse_lease_id("0", id));
  EXPECT_FALSE(parse_lease_id("xyz", id));
  EXPECT_FALSE(parse_lease_id("1234567890abcdef0", id));
}

TEST(CommandUtil, InlineLimitsAndPolicies) {
  PolicyMap policies{{"free", LimitSpec::window(Kind::kSlidingLog, 100, 60'000'000'000)}};
  std::vector<std::string_view> args = {"FG.TAKE", "k",    "token_bucket", "10",
                                        "5",       "1000", "COST",         "2"};
  size_t i = 2;
  LimitSpec spec;
  std::string error;
  ASSERT_TRUE(parse_limit(args, i, policies, spec, error)) << error;
  EXPECT_EQ(i, 6u);
  EXPECT_EQ(spec.kind, Kind::kTokenBucket);
  EXPECT_EQ(spec.c, 1'000'000'000);

  args = {"FG.TAKE", "k", "free"};
  i = 2;
  ASSERT_TRUE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(spec.a, 100);

  args = {"FG.TAKE", "k", "premium"};
  i = 2;
  EXPECT_FALSE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(error, "ERR unknown policy 'premium'");

  args = {"FG.TAKE", "k", "sliding_log", "abc", "1000"};
  i = 2;
  EXPECT_FALSE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(error, "ERR value is not an integer or out of range");

  args = {"FG.TAKE", "k", "fixed_window", "0", "1000"};
  i = 2;
  EXPECT_FALSE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(error, "ERR limit and window must be positive");

  args = {"FG.TAKE", "k", "fixed_window", "10", "-1"};
  i = 2;
  EXPECT_FALSE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(error, "ERR value is out of range, must be positive");

  args = {"FG.TAKE", "k", "token_bucket", "10", "5"};
  i = 2;
  EXPECT_FALSE(parse_limit(args, i, policies, spec, error));
  EXPECT_EQ(error, "ERR token_bucket needs 3 parameters");
}

TEST(CommandUtil, GlobMatch) {
  EXPECT_TRUE(glob_match("*", "save", true));
  EXPECT_TRUE(glob_match("max*", "maxclients", true));
  EXPECT_TRUE(glob_match("SAVE", "save", true));
  EXPECT_TRUE(glob_match("s?ve", "save", true));
  EXPECT_TRUE(glob_match("[st]ave", "save", true));
  EXPECT_FALSE(glob_match("[^s]ave", "save", true));
  EXPECT_FALSE(glob_match("max", "maxclients", true));
}

}  // namespace
}  // namespace fg
