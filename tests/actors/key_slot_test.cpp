// Key -> slot matches Redis Cluster (CRC16/XMODEM mod 16384 with hash tags).
#include "key_slot.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace fg {
namespace {

TEST(KeySlot, Crc16CheckValue) { EXPECT_EQ(crc16_xmodem("123456789", 9), 0x31C3); }

// CRC16/XMODEM as defined, a bit at a time: what the table-driven one must equal.
uint16_t crc16_bitwise(const std::string& s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc = static_cast<uint16_t>(crc ^ (c << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

TEST(KeySlot, Crc16EqualsTheBitwiseDefinitionAtEveryLength) {
  std::mt19937 rng(7);
  for (size_t len = 0; len <= 70; ++len) {
    for (int round = 0; round < 50; ++round) {
      std::string s(len, '\0');
      for (char& c : s) c = static_cast<char>(rng());
      ASSERT_EQ(crc16_xmodem(s.data(), s.size()), crc16_bitwise(s)) << "length " << len;
    }
  }
}

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
