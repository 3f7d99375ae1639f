// CRC16/XMODEM (poly 0x1021, init 0) and Redis Cluster's hash-tag rule.
#include "key_slot.hpp"

namespace fg {

namespace {
// Slicing by 8: t[k][x] is the CRC of the byte x followed by k zero bytes, so the CRC of 8
// bytes (the register folded into the first two) is eight independent lookups XORed
// together instead of a chain of eight dependent ones. Built from the polynomial at compile
// time.
struct CrcTables {
  uint16_t t[8][256];
};
constexpr CrcTables make_tables() {
  CrcTables c{};
  for (int x = 0; x < 256; ++x) {
    auto crc = static_cast<uint16_t>(x << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    c.t[0][x] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (int x = 0; x < 256; ++x) {
      const uint16_t prev = c.t[k - 1][x];
      c.t[k][x] = static_cast<uint16_t>((prev << 8) ^ c.t[0][prev >> 8]);
    }
  }
  return c;
}
constexpr CrcTables kCrc = make_tables();
}  // namespace

uint16_t crc16_xmodem(const char* data, size_t len) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  const auto& t = kCrc.t;
  uint16_t crc = 0;
  for (; len >= 8; len -= 8, p += 8) {
    crc = static_cast<uint16_t>(t[7][p[0] ^ (crc >> 8)] ^ t[6][p[1] ^ (crc & 0xff)] ^ t[5][p[2]] ^
                                t[4][p[3]] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]);
  }
  for (; len > 0; --len, ++p) crc = static_cast<uint16_t>((crc << 8) ^ t[0][(crc >> 8) ^ *p]);
  return crc;
}

// Only the part between the first '{' and the next '}' is hashed, when it is non-empty.
uint32_t key_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16_xmodem(key.data(), key.size()) & (kSlotCount - 1);
}

bool pattern_in_one_slot(std::string_view pattern) {
  const size_t open = pattern.find('{');
  if (open == std::string_view::npos) return false;
  const size_t close = pattern.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return false;
  return pattern.substr(0, close + 1).find_first_of("*?[\\") == std::string_view::npos;
}

}  // namespace fg
