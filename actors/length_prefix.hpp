// How every Floodgate TCP link frames its messages (the native protocol, node-to-node peer
// links): a 4-byte big-endian length, then that many bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace fg {

inline uint32_t read_length(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

inline void write_length(char* p, uint32_t n) {
  p[0] = static_cast<char>(n >> 24);
  p[1] = static_cast<char>(n >> 16);
  p[2] = static_cast<char>(n >> 8);
  p[3] = static_cast<char>(n);
}

// Reserves a length at the end of `out`; returns where, for close_frame.
inline size_t open_frame(std::string& out) {
  out.append(4, '\0');
  return out.size() - 4;
}
// Fills in the length of the frame opened at `at` (everything appended since).
inline void close_frame(std::string& out, size_t at) {
  write_length(out.data() + at, static_cast<uint32_t>(out.size() - at - 4));
}

}  // namespace fg
