// client-output-buffer-limit's value read and written as redis-server does: classes, sizes
// with units, its error texts, and CONFIG GET's form.
#include "output_limits.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(OutputLimits, ReadAndWrittenAsRedisServerDoes) {
  OutputLimits l;
  EXPECT_EQ(describe_output_limits(l),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
  EXPECT_TRUE(apply_output_limits("normal 1mb 2k 3", l).ok());
  EXPECT_EQ(l.normal.hard_bytes, 1 << 20);
  EXPECT_EQ(l.normal.soft_bytes, 2000);
  EXPECT_EQ(l.normal.soft_s, 3);
  EXPECT_TRUE(apply_output_limits("replica 1gb 1GB 0   pubsub 10 20 30", l).ok());
  EXPECT_EQ(describe_output_limits(l),
            "normal 1048576 2000 3 slave 1073741824 1073741824 0 pubsub 10 20 30");
}

TEST(OutputLimits, BadValuesAreRefusedWholeWithRedisServersWords) {
  OutputLimits l;
  const std::string before = describe_output_limits(l);
  EXPECT_EQ(apply_output_limits("normal 1 2", l).error(),
            "Wrong number of arguments in buffer limit configuration.");
  EXPECT_EQ(apply_output_limits("", l).error(),
            "Wrong number of arguments in buffer limit configuration.");
  EXPECT_EQ(apply_output_limits("nor 1 2 3", l).error(),
            "Invalid client class specified in buffer limit configuration.");
  for (const char* bad : {"normal 1x 2 3", "normal 1 -2 3", "normal 1 2 x", "normal mb 2 3"}) {
    EXPECT_EQ(apply_output_limits(bad, l).error(),
              "Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        << bad;
  }
  EXPECT_EQ(apply_output_limits("normal 1 2 3 pubsub 1 2", l).error(),
            "Wrong number of arguments in buffer limit configuration.");
  EXPECT_EQ(apply_output_limits("normal 1 2 3 nobody 1 2 3", l).error(),
            "Invalid client class specified in buffer limit configuration.");
  EXPECT_EQ(describe_output_limits(l), before);  // (nothing of a refused value applied)
}

TEST(OutputLimits, SizesAreReadAsRedisServerReadsThem) {
  EXPECT_EQ(parse_size("0"), 0);
  EXPECT_EQ(parse_size("3000000"), 3000000);
  EXPECT_EQ(parse_size("64mb"), 64 << 20);
  EXPECT_EQ(parse_size("64MB"), 64 << 20);
  EXPECT_EQ(parse_size("64m"), 64000000);
  EXPECT_EQ(parse_size("2k"), 2000);
  EXPECT_EQ(parse_size("2kb"), 2048);
  EXPECT_EQ(parse_size("1gb"), int64_t{1} << 30);
  EXPECT_EQ(parse_size("5b"), 5);
  for (const char* bad : {"", "mb", "64x", "-1", "1.5mb", "64 mb", "99999999999gb"}) {
    EXPECT_EQ(parse_size(bad), -1) << bad;
  }
}

}  // namespace
}  // namespace fg
