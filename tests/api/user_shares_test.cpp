// user-limits lines: each user's own caps, read as node/SETTINGS.md documents them.
#include "user_shares.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(UserShares, LimitLinesReadAsDocumented) {
  auto l = parse_user_limits("ta keys=1000 bytes=64mb scripts=5 waiters=10 subscriptions=7");
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->user, "ta");
  EXPECT_EQ(l->caps[Accounts::kKeys], 1000);
  EXPECT_EQ(l->caps[Accounts::kBytes], 64 << 20);
  EXPECT_EQ(l->caps[Accounts::kScripts], 5);
  EXPECT_EQ(l->caps[Accounts::kConnections], -1);  // (the share)
  EXPECT_FALSE(parse_user_limits("ta keys=many").ok());
  EXPECT_FALSE(parse_user_limits("ta nonsense=1").ok());
  EXPECT_FALSE(parse_user_limits("").ok());
}

}  // namespace
}  // namespace fg
