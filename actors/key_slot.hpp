// Redis Cluster's key -> slot function: CRC16/XMODEM of the key (or of its {hash tag}).
#pragma once
#include <bitset>
#include <cstdint>
#include <string_view>

namespace fg {

constexpr uint32_t kSlotCount = 16384;
using SlotBits = std::bitset<kSlotCount>;  // a set of slots

uint16_t crc16_xmodem(const char* data, size_t len);
uint32_t key_slot(std::string_view key);
// Whether every key a glob pattern (KEYS, SCAN MATCH) can match has the same hash tag, so
// lies in key_slot(pattern): the pattern's first {tag} is non-empty and nothing up to its
// '}' is a glob character. ("customer-limit-{user7}:*" is; "*{user7}*" is not.)
bool pattern_in_one_slot(std::string_view pattern);

}  // namespace fg
