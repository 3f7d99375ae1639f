// What a key holds in memory, in bytes, reckoned in constant time: its entry's allocation
// and what its value holds beyond it (a string's buffer, a container's elements as its
// running count says, a log's or a lease set's array). What the key is charged
// (accounts.hpp), and MEMORY USAGE's answer.
#pragma once
#include <cstdint>

#include "hash_value.hpp"
#include "key_table.hpp"
#include "lease_set.hpp"
#include "list_value.hpp"
#include "set_value.hpp"
#include "sliding_log.hpp"
#include "string_value.hpp"
#include "zset_value.hpp"

namespace fg {

// Whether a kind's value can grow after the key is made (a fixed-size limiter's cannot).
inline bool weight_varies(Kind k) {
  switch (k) {
    case Kind::kString:
    case Kind::kHash:
    case Kind::kSet:
    case Kind::kZSet:
    case Kind::kList:
    case Kind::kSlidingLog:
    case Kind::kConcurrency:
      return true;
    default:
      return false;
  }
}

inline uint64_t entry_weight(const Entry& e) {
  constexpr uint64_t kMallocOverhead = 16;  // (a heap block's header and rounding, about)
  uint64_t n = sizeof(Entry) + e.key_offset() + e.key_len + kMallocOverhead;
  switch (e.kind) {
    case Kind::kString:
      if (!string_is_int(e)) n += sizeof(std::string) + e.state<StringState>().s->capacity();
      break;
    case Kind::kHash:
      n += sizeof(HashValue) + e.state<HashValue*>()->bytes;
      break;
    case Kind::kSet:
      n += sizeof(SetValue) + e.state<SetValue*>()->bytes;
      break;
    case Kind::kZSet:
      n += sizeof(ZSetValue) + e.state<ZSetValue*>()->bytes;
      break;
    case Kind::kList:
      n += sizeof(ListValue) + e.state<ListValue*>()->bytes;
      break;
    case Kind::kSlidingLog: {
      const SlidingLogState& l = *e.state<SlidingLogState*>();
      n += sizeof(SlidingLogState) + l.entries.capacity() * sizeof(SlidingLogState::Entry);
      break;
    }
    case Kind::kConcurrency:
      n += sizeof(LeaseSet) + e.state<LeaseSet*>()->leases().capacity() * sizeof(Lease);
      break;
    default:
      break;
  }
  return n;
}

}  // namespace fg
