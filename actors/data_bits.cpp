// Bits of string values and the longest common subsequence, as Redis 7.0's bitops.c and
// t_string.c: SETBIT GETBIT BITCOUNT BITPOS BITFIELD BITFIELD_RO BITOP LCS, their checks in
// Redis's order and their texts. A bitmap is a string: it grows (zero-filled) in place up
// to proto-max-bulk-len, as Redis holds it, and weighs what it holds like any string.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "errors.hpp"
#include "shard.hpp"
#include "string_value.hpp"
#include "words.hpp"

namespace fg {

namespace {

constexpr char kBitOffset[] = "ERR bit offset is not an integer or out of range";
constexpr char kBitValue[] = "ERR bit is not an integer or out of range";
constexpr char kBitfieldType[] =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "
    "i64 is.";

// getBitOffsetFromArgument: a bit offset, "#n" (n times `bits`) when `hash`; below
// proto-max-bulk-len bytes.
bool bit_offset(std::string_view w, bool hash, int bits, size_t max_bytes, uint64_t& out) {
  const bool use_hash = hash && bits > 0 && !w.empty() && w[0] == '#';
  int64_t v;
  if (!parse_int(use_hash ? w.substr(1) : w, v)) return false;
  if (use_hash) {
    if (__builtin_mul_overflow(v, int64_t{bits}, &v)) return false;
  }
  if (v < 0 || static_cast<uint64_t>(v >> 3) >= max_bytes) return false;
  out = static_cast<uint64_t>(v);
  return true;
}

// getBitfieldTypeFromArgument: i1..i64, u1..u63.
bool bitfield_type(std::string_view w, bool& sign, int& bits) {
  if (w.empty() || (w[0] != 'i' && w[0] != 'u')) return false;
  sign = w[0] == 'i';
  int64_t n;
  if (!parse_int(w.substr(1), n) || n < 1 || n > (sign ? 64 : 63)) return false;
  bits = static_cast<int>(n);
  return true;
}

uint64_t get_unsigned(const unsigned char* p, size_t len, uint64_t offset, int bits) {
  uint64_t value = 0;
  for (int j = 0; j < bits; ++j) {
    const uint64_t byte = offset >> 3;
    const int bit = 7 - static_cast<int>(offset & 7);
    const uint64_t bitval = byte < len ? (p[byte] >> bit) & 1 : 0;
    value = (value << 1) | bitval;
    ++offset;
  }
  return value;
}
int64_t get_signed(const unsigned char* p, size_t len, uint64_t offset, int bits) {
  uint64_t v = get_unsigned(p, len, offset, bits);
  if (bits < 64 && (v & (uint64_t{1} << (bits - 1)))) v |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(v);
}
void set_unsigned(unsigned char* p, uint64_t offset, int bits, uint64_t value) {
  for (int j = 0; j < bits; ++j) {
    const uint64_t bitval = (value >> (bits - 1 - j)) & 1;
    const uint64_t byte = offset >> 3;
    const int bit = 7 - static_cast<int>(offset & 7);
    p[byte] = static_cast<unsigned char>((p[byte] & ~(1 << bit)) | (bitval << bit));
    ++offset;
  }
}

enum Overflow { kWrap, kSat, kFail };

// checkUnsignedBitfieldOverflow / checkSignedBitfieldOverflow: 0, or ±1 with `limit` what
// the operation results in under `ow`.
int unsigned_overflow(uint64_t value, int64_t incr, int bits, Overflow ow, uint64_t& limit) {
  const uint64_t max = bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  const auto maxincr = static_cast<int64_t>(max - value);
  const auto minincr = static_cast<int64_t>(0 - value);
  auto wrap = [&] { limit = (value + static_cast<uint64_t>(incr)) & ~(~uint64_t{0} << bits); };
  if (value > max || (incr > 0 && incr > maxincr)) {
    if (ow == kWrap) wrap();
    if (ow == kSat) limit = max;
    return 1;
  }
  if (incr < 0 && incr < minincr) {
    if (ow == kWrap) wrap();
    if (ow == kSat) limit = 0;
    return -1;
  }
  return 0;
}
int signed_overflow(int64_t value, int64_t incr, int bits, Overflow ow, int64_t& limit) {
  const int64_t max = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  const int64_t min = -max - 1;
  const auto maxincr =
      static_cast<int64_t>(static_cast<uint64_t>(max) - static_cast<uint64_t>(value));
  const auto minincr =
      static_cast<int64_t>(static_cast<uint64_t>(min) - static_cast<uint64_t>(value));
  auto wrap = [&] {
    uint64_t c = static_cast<uint64_t>(value) + static_cast<uint64_t>(incr);
    if (bits < 64) {
      const uint64_t msb = uint64_t{1} << (bits - 1), mask = ~uint64_t{0} << bits;
      c = (c & msb) ? (c | mask) : (c & ~mask);
    }
    limit = static_cast<int64_t>(c);
  };
  if (value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr)) {
    if (ow == kWrap) wrap();
    if (ow == kSat) limit = max;
    return 1;
  }
  if (value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr)) {
    if (ow == kWrap) wrap();
    if (ow == kSat) limit = min;
    return -1;
  }
  return 0;
}

// A bit range [first, last] of a string of `len` bytes, as BITCOUNT and BITPOS read
// start/end (bytes, or bits with BIT); false: empty.
bool bit_range(int64_t start, int64_t end, bool bit, int64_t len, int64_t& first, int64_t& last) {
  const int64_t total = bit ? len * 8 : len;
  if (start < 0) start += total;
  if (end < 0) end += total;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= total) end = total - 1;
  if (start > end) return false;
  first = bit ? start : start * 8;
  last = bit ? end : end * 8 + 7;
  return true;
}

int bit_at(std::string_view v, int64_t i) {
  return (static_cast<unsigned char>(v[static_cast<size_t>(i >> 3)]) >> (7 - (i & 7))) & 1;
}

}  // namespace

void Shard::data_bits(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  std::string buf;
  // The key's string, or null when absent; -WRONGTYPE in op.status.
  auto existing = [&](Entry*& e) -> bool {
    e = typed(op, Kind::kString, false, now_ns);
    return op.status == OpStatus::kOk;
  };
  // The key's bytes to change in place, grown with zeros to `bytes` (a new key made empty
  // first); null at the key cap.
  auto editable = [&](Entry*& e, size_t bytes) -> std::string* {
    if (!e) {
      e = typed(op, Kind::kString, true, now_ns);
      if (!e) return nullptr;
      e->state<StringState>().s = new std::string();
      e->flags = static_cast<uint8_t>(e->flags & ~kEntryInt);
    } else if (string_is_int(*e)) {
      const int64_t v = e->state<StringState>().i;
      e->state<StringState>().s = new std::string(std::to_string(v));
      e->flags = static_cast<uint8_t>(e->flags & ~kEntryInt);
    }
    e->flags = static_cast<uint8_t>(e->flags | kEntryRaw);
    std::string& s = *e->state<StringState>().s;
    if (s.size() < bytes) s.resize(bytes, '\0');
    return &s;
  };
  switch (c) {
    case DataCmd::kSetBit: {
      uint64_t offset;
      if (!bit_offset(a[2], false, 0, max_string_, offset)) return r.error(kBitOffset);
      int64_t on;
      if (!parse_int(a[3], on) || (on & ~int64_t{1})) return r.error(kBitValue);
      Entry* e;
      if (!existing(e)) return;
      std::string* s = editable(e, (offset >> 3) + 1);
      if (!s) return;
      const size_t byte = offset >> 3;
      const int bit = 7 - static_cast<int>(offset & 7);
      const int old = (static_cast<unsigned char>((*s)[byte]) >> bit) & 1;
      (*s)[byte] = static_cast<char>((static_cast<unsigned char>((*s)[byte]) & ~(1 << bit)) |
                                     (static_cast<int>(on) << bit));
      mark(e, op.key);
      return r.integer(old);
    }
    case DataCmd::kGetBit: {
      uint64_t offset;
      if (!bit_offset(a[2], false, 0, max_string_, offset)) return r.error(kBitOffset);
      Entry* e;
      if (!existing(e)) return;
      if (!e) return r.integer(0);
      const std::string_view v = string_get(*e, buf);
      if ((offset >> 3) >= v.size()) return r.integer(0);
      return r.integer(bit_at(v, static_cast<int64_t>(offset)));
    }
    case DataCmd::kBitCount: {
      Entry* e;
      if (!existing(e)) return;
      if (!e) return r.integer(0);
      const std::string_view v = string_get(*e, buf);
      const auto len = static_cast<int64_t>(v.size());
      int64_t first = 0, last = len * 8 - 1;
      if (a.size() == 4 || a.size() == 5) {
        int64_t start, end;
        if (!parse_int(a[2], start) || !parse_int(a[3], end)) return r.error(err::kNotInteger);
        if (start < 0 && end < 0 && start > end) return r.integer(0);
        bool bit = false;
        if (a.size() == 5) {
          if (iequals(a[4], "bit")) {
            bit = true;
          } else if (!iequals(a[4], "byte")) {
            return r.error(err::kSyntax);
          }
        }
        if (!bit_range(start, end, bit, len, first, last)) return r.integer(0);
      } else if (a.size() != 2) {
        return r.error(err::kSyntax);
      }
      if (first > last) return r.integer(0);
      int64_t count = 0, i = first;
      for (; i <= last && (i & 7); ++i) count += bit_at(v, i);
      for (; i + 7 <= last; i += 8)
        count += __builtin_popcount(static_cast<unsigned char>(v[static_cast<size_t>(i >> 3)]));
      for (; i <= last; ++i) count += bit_at(v, i);
      return r.integer(count);
    }
    case DataCmd::kBitPos: {
      int64_t bit;
      if (!parse_int(a[2], bit)) return r.error(err::kNotInteger);
      if (bit != 0 && bit != 1) return r.error("ERR The bit argument must be 1 or 0.");
      Entry* e;
      if (!existing(e)) return;
      if (!e) return r.integer(bit ? -1 : 0);
      const std::string_view v = string_get(*e, buf);
      const auto len = static_cast<int64_t>(v.size());
      int64_t first = 0, last = len * 8 - 1;
      bool end_given = false;
      if (a.size() >= 4 && a.size() <= 6) {
        int64_t start, end = 0;
        if (!parse_int(a[3], start)) return r.error(err::kNotInteger);
        bool in_bits = false;
        if (a.size() == 6) {
          if (iequals(a[5], "bit")) {
            in_bits = true;
          } else if (!iequals(a[5], "byte")) {
            return r.error(err::kSyntax);
          }
        }
        if (a.size() >= 5) {
          if (!parse_int(a[4], end)) return r.error(err::kNotInteger);
          end_given = true;
        } else {
          end = len - 1;
        }
        if (!bit_range(start, end, in_bits, len, first, last)) return r.integer(-1);
      } else if (a.size() != 3) {
        return r.error(err::kSyntax);
      }
      if (first > last) return r.integer(-1);
      // (whole bytes that cannot hold it are skipped: all zeros for a 1, all ones for a 0)
      const unsigned char skip = bit ? 0x00 : 0xff;
      int64_t i = first;
      while (i <= last) {
        if ((i & 7) == 0 && i + 7 <= last &&
            static_cast<unsigned char>(v[static_cast<size_t>(i >> 3)]) == skip) {
          i += 8;
          continue;
        }
        if (bit_at(v, i) == bit) return r.integer(i);
        ++i;
      }
      // (no clear bit in the string: the first past it, unless the range was given whole)
      return r.integer(bit == 0 && !end_given ? last + 1 : -1);
    }
    default: {  // BITFIELD, BITFIELD_RO
      struct Field {
        int opcode;  // 0 get, 1 set, 2 incrby
        uint64_t offset;
        int64_t value;
        Overflow ow;
        int bits;
        bool sign;
      };
      std::vector<Field> fields;
      Overflow ow = kWrap;
      bool readonly = true;
      uint64_t highest = 0;
      for (size_t j = 2; j < a.size(); ++j) {
        const size_t rest = a.size() - j - 1;
        int opcode;
        if (iequals(a[j], "get") && rest >= 2) {
          opcode = 0;
        } else if (iequals(a[j], "set") && rest >= 3) {
          opcode = 1;
        } else if (iequals(a[j], "incrby") && rest >= 3) {
          opcode = 2;
        } else if (iequals(a[j], "overflow") && rest >= 1) {
          const std::string_view t = a[++j];
          if (iequals(t, "wrap")) {
            ow = kWrap;
          } else if (iequals(t, "sat")) {
            ow = kSat;
          } else if (iequals(t, "fail")) {
            ow = kFail;
          } else {
            return r.error("ERR Invalid OVERFLOW type specified");
          }
          continue;
        } else {
          return r.error(err::kSyntax);
        }
        Field f{opcode, 0, 0, ow, 0, false};
        if (!bitfield_type(a[j + 1], f.sign, f.bits)) return r.error(kBitfieldType);
        if (!bit_offset(a[j + 2], true, f.bits, max_string_, f.offset)) return r.error(kBitOffset);
        if (opcode != 0) {
          readonly = false;
          highest = std::max<uint64_t>(highest, f.offset + static_cast<uint64_t>(f.bits) - 1);
          if (!parse_int(a[j + 3], f.value)) return r.error(err::kNotInteger);
        }
        fields.push_back(f);
        j += opcode == 0 ? 2 : 3;
      }
      Entry* e;
      std::string* s = nullptr;
      if (readonly) {
        if (!existing(e)) return;
      } else {
        if (c == DataCmd::kBitFieldRo)
          return r.error("ERR BITFIELD_RO only supports the GET subcommand");
        if (!existing(e)) return;
        s = editable(e, (highest >> 3) + 1);
        if (!s) return;
      }
      r.array(static_cast<int64_t>(fields.size()));
      for (const Field& f : fields) {
        if (f.opcode == 0) {
          std::string_view v =
              e ? (s ? std::string_view(*s) : string_get(*e, buf)) : std::string_view();
          const auto* p = reinterpret_cast<const unsigned char*>(v.data());
          if (f.sign) {
            r.integer(get_signed(p, v.size(), f.offset, f.bits));
          } else {
            r.integer(static_cast<int64_t>(get_unsigned(p, v.size(), f.offset, f.bits)));
          }
          continue;
        }
        auto* p = reinterpret_cast<unsigned char*>(s->data());
        if (f.sign) {
          const int64_t old = get_signed(p, s->size(), f.offset, f.bits);
          int64_t wrapped = 0, next, ret;
          int over;
          if (f.opcode == 2) {
            over = signed_overflow(old, f.value, f.bits, f.ow, wrapped);
            next = over ? wrapped
                        : static_cast<int64_t>(static_cast<uint64_t>(old) +
                                               static_cast<uint64_t>(f.value));
            ret = next;
          } else {
            next = f.value;
            over = signed_overflow(next, 0, f.bits, f.ow, wrapped);
            if (over) next = wrapped;
            ret = old;
          }
          if (over && f.ow == kFail) {
            r.null();
          } else {
            r.integer(ret);
            set_unsigned(p, f.offset, f.bits, static_cast<uint64_t>(next));
          }
        } else {
          const uint64_t old = get_unsigned(p, s->size(), f.offset, f.bits);
          uint64_t wrapped = 0, next, ret;
          int over;
          if (f.opcode == 2) {
            next = old + static_cast<uint64_t>(f.value);
            over = unsigned_overflow(old, f.value, f.bits, f.ow, wrapped);
            if (over) next = wrapped;
            ret = next;
          } else {
            next = static_cast<uint64_t>(f.value);
            over = unsigned_overflow(next, 0, f.bits, f.ow, wrapped);
            if (over) next = wrapped;
            ret = old;
          }
          if (over && f.ow == kFail) {
            r.null();
          } else {
            r.integer(static_cast<int64_t>(ret));
            set_unsigned(p, f.offset, f.bits, next);
          }
        }
      }
      if (s) mark(e, op.key);
      return;
    }
  }
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]: the result (as long as the longest source,
// missing bytes as zeros) stored at destkey, or destkey deleted when every source is empty.
void Shard::bit_op(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  enum { kAnd, kOr, kXor, kNot } kind;
  if (iequals(a[1], "and")) {
    kind = kAnd;
  } else if (iequals(a[1], "or")) {
    kind = kOr;
  } else if (iequals(a[1], "xor")) {
    kind = kXor;
  } else if (iequals(a[1], "not")) {
    kind = kNot;
  } else {
    return r.error(err::kSyntax);
  }
  if (kind == kNot && a.size() != 4) {
    return r.error("ERR BITOP NOT must be called with a single source key.");
  }
  std::vector<std::string> src;
  size_t longest = 0;
  for (size_t j = 3; j < a.size(); ++j) {
    Shard& s = *holder_of(a[j]);
    Entry* e = s.lookup(a[j], KeyTable::hash(a[j]), now_ns);
    std::string v;
    if (e) {
      if (e->kind != Kind::kString) {
        op.status = OpStatus::kWrongType;
        return;
      }
      std::string buf;
      v = std::string(string_get(*e, buf));
    }
    longest = std::max(longest, v.size());
    src.push_back(std::move(v));
  }
  std::string out(longest, '\0');
  for (size_t i = 0; i < longest; ++i) {
    auto byte = [&](size_t k) -> unsigned char {
      return i < src[k].size() ? static_cast<unsigned char>(src[k][i]) : 0;
    };
    unsigned char o = byte(0);
    if (kind == kNot) o = static_cast<unsigned char>(~o);
    for (size_t k = 1; k < src.size(); ++k) {
      if (kind == kAnd) o &= byte(k);
      if (kind == kOr) o |= byte(k);
      if (kind == kXor) o ^= byte(k);
    }
    out[i] = static_cast<char>(o);
  }
  const std::string_view dst = a[2];
  Entry* e = fresh_destination(op, dst, Kind::kString, longest == 0, now_ns);
  if (!e) return;  // (nothing to store: 0 answered; or the key cap)
  e->state<StringState>().s = new std::string(std::move(out));
  e->flags = static_cast<uint8_t>((e->flags & ~kEntryInt) | kEntryRaw);
  holder_of(dst)->mark(e, dst);
  r.integer(static_cast<int64_t>(longest));
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] (t_string.c's lcsCommand): the
// table of (len1 + 1) × (len2 + 1) lengths is held to proto-max-bulk-len bytes, as Redis
// holds it.
void Shard::lcs(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  std::string values[2];
  for (int k = 0; k < 2; ++k) {
    const std::string_view key = a[1 + static_cast<size_t>(k)];
    Entry* e = holder_of(key)->lookup(key, KeyTable::hash(key), now_ns);
    if (e && e->kind != Kind::kString) {
      return r.error("ERR The specified keys must contain string values");
    }
    if (e) {
      std::string buf;
      values[k] = std::string(string_get(*e, buf));
    }
  }
  bool getlen = false, getidx = false, withmatchlen = false;
  int64_t minmatchlen = 0;
  for (size_t j = 3; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (iequals(a[j], "idx")) {
      getidx = true;
    } else if (iequals(a[j], "len")) {
      getlen = true;
    } else if (iequals(a[j], "withmatchlen")) {
      withmatchlen = true;
    } else if (iequals(a[j], "minmatchlen") && more) {
      if (!parse_int(a[++j], minmatchlen)) return r.error(err::kNotInteger);
      if (minmatchlen < 0) minmatchlen = 0;
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (getlen && getidx) {
    return r.error("ERR If you want both the length and indexes, please just use IDX.");
  }
  const std::string& sa = values[0];
  const std::string& sb = values[1];
  if (sa.size() >= UINT32_MAX - 1 || sb.size() >= UINT32_MAX - 1) {
    return r.error("ERR String too long for LCS");
  }
  const auto alen = static_cast<uint32_t>(sa.size()), blen = static_cast<uint32_t>(sb.size());
  const uint64_t cells = static_cast<uint64_t>(alen + 1) * (blen + 1);
  if (cells * sizeof(uint32_t) > max_string_) {
    return r.error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  }
  std::vector<uint32_t> table(cells);
  auto at = [&](uint32_t i, uint32_t j) -> uint32_t& {
    return table[j + static_cast<uint64_t>(i) * (blen + 1)];
  };
  for (uint32_t i = 1; i <= alen; ++i) {
    for (uint32_t j = 1; j <= blen; ++j) {
      at(i, j) =
          sa[i - 1] == sb[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  const uint32_t total = at(alen, blen);
  uint32_t idx = total;
  std::string result(idx, '\0');
  struct Range {
    uint32_t a0, a1, b0, b1;
  };
  std::vector<Range> ranges;
  uint32_t as = alen, ae = 0, bs = 0, be = 0;  // (as == alen: no range open)
  uint32_t i = alen, j = blen;
  const bool compute = getidx || !getlen;
  while (compute && i > 0 && j > 0) {
    bool emit = false;
    if (sa[i - 1] == sb[j - 1]) {
      result[idx - 1] = sa[i - 1];
      if (as == alen) {
        as = ae = i - 1;
        bs = be = j - 1;
      } else if (as == i && bs == j) {
        --as;
        --bs;
      } else {
        emit = true;
      }
      if (as == 0 || bs == 0) emit = true;
      --idx;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (as != alen) emit = true;
    }
    if (emit) {
      const uint32_t match_len = ae - as + 1;
      if (minmatchlen == 0 || match_len >= minmatchlen) ranges.push_back({as, ae, bs, be});
      as = alen;
    }
  }
  if (getidx) {
    r.map(2);
    r.bulk("matches");
    r.array(static_cast<int64_t>(ranges.size()));
    for (const Range& g : ranges) {
      r.array(withmatchlen ? 3 : 2);
      r.array(2);
      r.integer(g.a0);
      r.integer(g.a1);
      r.array(2);
      r.integer(g.b0);
      r.integer(g.b1);
      if (withmatchlen) r.integer(g.a1 - g.a0 + 1);
    }
    r.bulk("len");
    return r.integer(total);
  }
  if (getlen) return r.integer(total);
  r.bulk(result);
}

}  // namespace fg
