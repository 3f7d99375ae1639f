// The slow log's entries as Redis keeps them, its length, and its allowance per second.
#include "slow_log.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fg {
namespace {

TEST(SlowLog, KeepsWordsAsRedisTrimsThemNewestFirstUpToItsLength) {
  SlowLog log;
  log.max_len = 2;
  const std::string long_word(130, 'A');
  std::vector<std::string> many = {"sadd", "set"};
  for (int i = 0; i < 40; ++i) many.push_back(std::to_string(i));
  std::vector<std::string_view> words(many.begin(), many.end());
  log.add({"get", long_word}, 12, 1'700'000'000'123, "127.0.0.1:5", "me");
  log.add(words, 34, 1'700'000'000'456, "127.0.0.1:6", "");
  const auto e = log.newest(-1);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].id, 1);
  EXPECT_EQ(e[0].duration_us, 34);
  ASSERT_EQ(e[0].words.size(), SlowLog::kMaxWords);
  EXPECT_EQ(e[0].words.back(), "... (11 more arguments)");
  EXPECT_EQ(e[1].words[1], std::string(128, 'A') + "... (2 more bytes)");
  EXPECT_EQ(e[1].unix_s, 1'700'000'000);
  EXPECT_EQ(e[1].name, "me");
  log.add({"ping"}, 1, 1'700'000'000'500, "127.0.0.1:7", "");
  EXPECT_EQ(log.size(), 2u);  // (the oldest went)
  EXPECT_EQ(log.newest(1)[0].words[0], "ping");
  EXPECT_EQ(log.newest(0).size(), 0u);
  log.reset();
  EXPECT_EQ(log.size(), 0u);
}

TEST(SlowLog, MakesAtMostItsAllowanceASecond) {
  SlowLog log;
  log.max_len = 1'000'000;
  EXPECT_TRUE(log.slow(10'000));
  EXPECT_FALSE(log.slow(9'999));
  const int64_t t = 1'700'000'000'000;
  for (int64_t i = 0; i < SlowLog::kMaxPerSecond + 10; ++i)
    log.add({"ping"}, 1, t + i % 900, "", "");
  EXPECT_EQ(log.size(), static_cast<size_t>(SlowLog::kMaxPerSecond));
  EXPECT_EQ(log.skipped(), 10u);
  EXPECT_FALSE(log.room(t + 999));
  EXPECT_TRUE(log.room(t + 1000));  // (the next second's)
  log.add({"ping"}, 1, t + 1000, "", "");
  EXPECT_EQ(log.size(), static_cast<size_t>(SlowLog::kMaxPerSecond) + 1);
  log.slower_than_us = -1;
  EXPECT_FALSE(log.slow(1'000'000'000));
}

}  // namespace
}  // namespace fg
