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

}  // namespace fg
