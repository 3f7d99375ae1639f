// The worst-case cost of a Lua pattern match: what backtracks multiplies, what cannot does
// not, and the patterns that stall a matcher for seconds are past the bound on small inputs.
#include "pattern_cost.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

double steps(std::string_view p, size_t n, PatternUse use = PatternUse::kAnchorable) {
  return pattern_steps(p, n, use);
}

TEST(PatternCost, FixedItemsCostOnePassPerStart) {
  EXPECT_EQ(steps("abc", 99), 100.0 * 3);
  EXPECT_EQ(steps("^abc", 99), 3.0);                         // anchored: one start
  EXPECT_EQ(steps("^abc", 99, PatternUse::kGmatch), 400.0);  // gmatch reads '^' as a character
  EXPECT_EQ(steps("[%]x]y", 9), 10.0 * 2);  // a set with an escaped ']' is one item
  EXPECT_EQ(steps("[]]", 9), 10.0);         // ']' first in a set is a member
}

TEST(PatternCost, AQuantifierBacktracksOnlyWhenSomethingFollowsIt) {
  EXPECT_EQ(steps("%d+", 999), 1000.0);          // last item: expands once per start
  EXPECT_EQ(steps("(%d+)", 999), 1000.0);        // captures after it do not fail
  EXPECT_EQ(steps("%d+$", 999), 1000.0 * 1000);  // the end anchor can fail
  EXPECT_EQ(steps("a*b", 999), 1000.0 * 2 * 1000);
  EXPECT_EQ(steps("a?b", 999), 1000.0 * 2 * 2);
  EXPECT_EQ(steps("%bxyz", 999), 1000.0 * 2 * 1000);  // a balance scans the subject
  EXPECT_EQ(steps("(a)%1", 999), 1000.0 * 2 * 1000);  // so may a back reference
}

TEST(PatternCost, StallingPatternsArePastTheBoundAndEverydayOnesAreNot) {
  EXPECT_GT(steps(".-.-.-.-b", 200), kMaxPatternSteps);  // ran 9 s in a node before
  EXPECT_GT(steps("a*b", 3000), kMaxPatternSteps);
  EXPECT_LT(steps("a*b", 500), kMaxPatternSteps);
  EXPECT_LT(steps("^(%d+):(%d+)$", 40), kMaxPatternSteps);                     // "1700000000:42"
  EXPECT_LT(steps("([^,]+)", 100000, PatternUse::kGmatch), kMaxPatternSteps);  // split a list
  EXPECT_LT(steps("%s+", 100000), kMaxPatternSteps);
}

TEST(PatternCost, MalformedPatternsAreCostedAsFarAsTheyRead) {
  EXPECT_EQ(steps("a%", 9), 10.0);  // (the matcher raises "malformed pattern")
  EXPECT_EQ(steps("[abc", 9), 10.0);
  EXPECT_EQ(steps("", 9), 10.0);
  EXPECT_LE(steps(std::string(200, '*').insert(0, "a") + "b", 1 << 20), 1e300);
}

}  // namespace
}  // namespace fg
