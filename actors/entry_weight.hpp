// What a key holds in memory, in bytes, reckoned in constant time: its entry's allocation
// and what its value holds beyond it (a string's buffer, a container's elements as its
// running count says, a log's or a lease set's array). What the key is charged
// (accounts.hpp), and MEMORY USAGE's answer.
#pragma once
#include <cstdint>

#include "key_table.hpp"
#include "value_kinds.hpp"

namespace fg {

// Whether a kind's value can grow after the key is made (a fixed-size limiter's cannot).
inline bool weight_varies(Kind k) { return kind_row(k).heap_bytes != nullptr; }

inline uint64_t entry_weight(const Entry& e) {
  constexpr uint64_t kMallocOverhead = 16;  // (a heap block's header and rounding, about)
  const uint64_t n = sizeof(Entry) + e.key_offset() + e.key_len + kMallocOverhead;
  const auto heap = kind_row(e.kind).heap_bytes;
  return heap ? n + heap(e) : n;
}

}  // namespace fg
