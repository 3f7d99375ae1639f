// A string key's value, held in its entry's state: an integer in place when the bytes are
// one (strict decimal, as Redis encodes them: INCR counters cost no allocation), else a
// heap string. The entry's kEntryInt flag says which.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "key_table.hpp"
#include "words.hpp"

namespace fg {

struct StringState {
  union {
    int64_t i;
    std::string* s;
  };
};
static_assert(sizeof(StringState) == 8);

inline bool string_is_int(const Entry& e) { return e.flags & kEntryInt; }

inline void string_free(Entry& e) {
  if (!string_is_int(e)) delete e.state<StringState>().s;
  e.state<StringState>().s = nullptr;
  e.flags = static_cast<uint8_t>(e.flags | kEntryInt);  // (nothing left to free)
}

inline void string_set_int(Entry& e, int64_t v) {
  if (!string_is_int(e)) delete e.state<StringState>().s;
  e.flags = static_cast<uint8_t>((e.flags | kEntryInt) & ~(kEntryText | kEntryRaw));
  e.state<StringState>().i = v;
}

inline void string_set(Entry& e, std::string_view bytes) {
  e.flags = static_cast<uint8_t>(e.flags & ~(kEntryText | kEntryRaw));
  int64_t v;
  if (bytes.size() <= 20 && parse_int(bytes, v)) return string_set_int(e, v);
  if (string_is_int(e)) {
    e.state<StringState>().s = new std::string(bytes);
    e.flags = static_cast<uint8_t>(e.flags & ~kEntryInt);
  } else if (std::string& cur = *e.state<StringState>().s; cur.capacity() > 2 * bytes.size() + 64) {
    std::string(bytes).swap(cur);  // (a value that shrank lets go of what it no longer needs)
  } else {
    cur.assign(bytes.data(), bytes.size());
  }
}

// The value's bytes; `buf` holds them when the value is an integer.
inline std::string_view string_get(Entry& e, std::string& buf) {
  if (!string_is_int(e)) return *e.state<StringState>().s;
  buf = std::to_string(e.state<StringState>().i);
  return buf;
}

}  // namespace fg
