// Words as Redis reads them: strict integers, lease ids (glob patterns: glob_test.cpp).
#include "words.hpp"

#include <gtest/gtest.h>

#include "errors.hpp"
#include "limit_spec.hpp"

namespace fg {
namespace {

TEST(Words, StrictIntegers) {
  int64_t v;
  EXPECT_TRUE(parse_int("0", v));
  EXPECT_TRUE(parse_int("-12", v));
  EXPECT_EQ(v, -12);
  EXPECT_TRUE(parse_int("9223372036854775807", v));
  EXPECT_TRUE(parse_int("-9223372036854775808", v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(parse_int("120", v));
  EXPECT_EQ(v, 120);
  // As Redis's string2ll: no sign but '-', no leading zero (not even "-0"), no spaces.
  for (const char* bad :
       {"", "+1", "01", "-0", "-01", "-", "1.5", "1e3", " 1", "1 ", "abc", "9223372036854775808",
        "-9223372036854775809", "99999999999999999999", "1-2"}) {
    EXPECT_FALSE(parse_int(bad, v)) << bad;
  }
}

TEST(Words, LeaseIds) {
  uint64_t id;
  EXPECT_TRUE(parse_lease_id("384bfc3d95e58352", id));
  EXPECT_EQ(id, 0x384bfc3d95e58352ULL);
  EXPECT_FALSE(parse_lease_id("0", id));
  EXPECT_FALSE(parse_lease_id("xyz", id));
  EXPECT_FALSE(parse_lease_id("1234567890abcdef0", id));
}

TEST(LimitWords, EveryDoorReadsALimitTheSameWay) {
  std::vector<std::string_view> args = {"FG.TAKE", "k",    "token_bucket", "10",
                                        "5",       "1000", "COST",         "2"};
  size_t i = 2;
  Result<LimitSpec> spec = parse_limit_words(args, i);
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(i, 6u);
  EXPECT_EQ(spec->kind, Kind::kTokenBucket);
  EXPECT_EQ(spec->c, 1'000'000'000);
  auto error_of = [](std::vector<std::string_view> words) {
    size_t at = 0;
    Result<LimitSpec> r = parse_limit_words(words, at);
    return r.ok() ? std::string("ok") : r.error();
  };
  EXPECT_EQ(error_of({"sliding_log", "abc", "1000"}),
            "ERR value is not an integer or out of range");
  EXPECT_EQ(error_of({"fixed_window", "0", "1000"}), "ERR limit and window must be positive");
  EXPECT_EQ(error_of({"fixed_window", "10", "-1"}), "ERR value is out of range, must be positive");
  EXPECT_EQ(error_of({"token_bucket", "10", "5"}), "ERR token_bucket needs 3 parameters");
  EXPECT_EQ(error_of({"sliding_log", "100001", "1000"}),
            "ERR sliding_log limit must be at most 100000");
  EXPECT_EQ(error_of({"free"}), std::string(err::kLimitNeedsKind));
  EXPECT_EQ(error_of({"gcra", "0", "1", "99999999999999999"}),
            "ERR value is not an integer or out of range");
  // The native door's and the config file's way in: the same checks, the same words.
  EXPECT_EQ(make_limit(Kind::kFixedWindow, 0, 0, 1000).error(),
            "ERR limit and window must be positive");
  EXPECT_EQ(make_limit(Kind::kNone, 1, 1, 1000).error(), "ERR unknown limiter kind");
  EXPECT_EQ(make_limit(Kind::kConcurrency, 5, 0, 30000)->c, 30'000'000'000);
}

}  // namespace
}  // namespace fg
