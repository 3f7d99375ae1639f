// Key -> slot matches Redis Cluster (CRC16/XMODEM mod 16384 with hash tags).
#include "key_slot.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(KeySlot, Crc16CheckValue) { EXPECT_EQ(crc16_xmodem("123456789", 9), 0x31C3); }

TEST(KeySlot, MatchesRedisClusterKeyslot) {
  // Values as `CLUSTER KEYSLOT` reports them on a Redis Cluster.
  EXPECT_EQ(key_slot("foo"), 12182u);
  EXPECT_EQ(key_slot("bar"), 5061u);
  EXPECT_EQ(key_slot("hello"), 866u);
  EXPECT_EQ(key_slot(""), 0u);
}

TEST(KeySlot, HashTags) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("{user1000}.followers"), key_slot("{user1000}.following"));
  EXPECT_EQ(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));
  EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));  // empty first tag: whole key
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
}

}  // namespace
}  // namespace fg
