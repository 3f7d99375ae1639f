// Packed records: writing them from entries, reading and checking them, restoring them.
#include "packed_state.hpp"

#include <cstring>

#include "entry_snapshot.hpp"
#include "string_value.hpp"
#include "value_kinds.hpp"

namespace fg {

namespace {

constexpr uint32_t kMaxPackedString = 512u << 20;  // Redis's proto-max-bulk-len default

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // (every supported target is little-endian)
  out.append(b, sizeof(T));
}

template <class T>
bool get(std::string_view in, size_t& pos, T& v) {
  if (in.size() - pos < sizeof(T)) return false;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

void put_key(std::string& out, Kind k, std::string_view key) {
  out.push_back(static_cast<char>(k));
  put<uint16_t>(out, static_cast<uint16_t>(key.size()));
  out.append(key);
}

// The fixed-size limiters: how many integers their state is (0: a string, packed apart).
size_t int_count(Kind k) {
  const KindRow& row = kind_row(k);
  return row.packed ? static_cast<size_t>(row.fields) : 0;
}

}  // namespace

bool packable(Kind k) { return kind_row(k).packed; }

void pack_entry(Entry& e, std::string& out) {
  put_key(out, e.kind, e.key());
  put<int64_t>(out, e.deadline_ms());
  if (e.kind == Kind::kString) {
    if (string_is_int(e)) {
      out.push_back(1);
      put<int64_t>(out, e.state<StringState>().i);
    } else {
      const std::string& s = *e.state<StringState>().s;
      out.push_back(0);
      put<uint32_t>(out, static_cast<uint32_t>(s.size()));
      out.append(s);
    }
    return;
  }
  // The limiters' states are their integers, in order (static_asserts in packed_state_test).
  out.append(reinterpret_cast<const char*>(e.state_bytes()), int_count(e.kind) * sizeof(int64_t));
}

void pack_gone(std::string_view key, std::string& out) { put_key(out, Kind::kNone, key); }

bool read_packed(std::string_view in, PackedRecord& r) {
  size_t pos = 0;
  uint8_t kind = 0;
  uint16_t key_len = 0;
  if (!get(in, pos, kind) || !get(in, pos, key_len)) return false;
  if (kind > static_cast<uint8_t>(kLastKind) || key_len > kMaxKeyLen) return false;
  if (in.size() - pos < key_len) return false;
  r = PackedRecord{};
  r.kind = static_cast<Kind>(kind);
  r.key = in.substr(pos, key_len);
  pos += key_len;
  if (r.kind != Kind::kNone) {
    if (!packable(r.kind)) return false;
    if (!get(in, pos, r.deadline_ms) || r.deadline_ms < 0) return false;
    if (r.kind == Kind::kString) {
      uint8_t is_int = 0;
      if (!get(in, pos, is_int) || is_int > 1) return false;
      r.is_int = is_int == 1;
      if (r.is_int) {
        if (!get(in, pos, r.ints[0])) return false;
      } else {
        uint32_t n = 0;
        if (!get(in, pos, n) || n > kMaxPackedString || in.size() - pos < n) return false;
        r.bytes = in.substr(pos, n);
        pos += n;
      }
    } else {
      for (size_t i = 0; i < int_count(r.kind); ++i)
        if (!get(in, pos, r.ints[i])) return false;
    }
  }
  r.size = pos;
  return true;
}

void restore_packed(Entry& e, const PackedRecord& r) {
  if (r.kind == Kind::kString) {
    if (r.is_int) return string_set_int(e, r.ints[0]);
    return string_set(e, r.bytes);
  }
  std::memcpy(e.state_bytes(), r.ints, int_count(r.kind) * sizeof(int64_t));
}

void ShardChanges::clear() {
  packed.clear();
  marks.clear();
  snapshots.clear();
  complete = true;
  if (packed.capacity() > (size_t{8} << 20)) packed.shrink_to_fit();  // after a burst
  if (marks.capacity() > (size_t{256} << 10)) marks.shrink_to_fit();
  if (snapshots.capacity() > 4096) snapshots.shrink_to_fit();
}

}  // namespace fg
