// The two libraries Redis loads into scripts that Debian does not package: `struct` (binary
// records by a format string) and `cmsgpack` (MessagePack). They behave as the ones inside
// redis-server do, down to their error texts, and are checked against it side by side
// (ScriptDiff in tests/node).
//
// Lua errors are longjmps: nothing here keeps an object with a destructor in a frame that
// may raise one. Output is built in Lua userdata (Out), which the collector frees whatever
// happens.
#include "lua_libs.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace fg {

namespace {

constexpr bool kLittle = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// A growing byte string held by a userdata at stack index `at` (replaced when it grows).
struct Out {
  int at;
  char* p;
  size_t len;
  size_t cap;
};

Out out_open(lua_State* L) {
  Out o{0, nullptr, 0, 64};
  o.p = static_cast<char*>(lua_newuserdata(L, o.cap));
  o.at = lua_gettop(L);
  return o;
}

void out_put(lua_State* L, Out& o, const void* data, size_t n) {
  if (o.cap - o.len < n) {
    size_t cap = o.cap * 2;
    while (cap - o.len < n) cap *= 2;
    auto* q = static_cast<char*>(lua_newuserdata(L, cap));
    std::memcpy(q, o.p, o.len);
    lua_replace(L, o.at);
    o.p = q;
    o.cap = cap;
  }
  std::memcpy(o.p + o.len, data, n);
  o.len += n;
}

void out_byte(lua_State* L, Out& o, unsigned char b) { out_put(L, o, &b, 1); }

// `n` bytes of `v`, most significant first.
void out_be(lua_State* L, Out& o, uint64_t v, int n) {
  unsigned char b[8];
  for (int i = n - 1; i >= 0; --i, v >>= 8) b[i] = static_cast<unsigned char>(v & 0xff);
  out_put(L, o, b, static_cast<size_t>(n));
}

// Replaces the userdata with the string it holds.
void out_close(lua_State* L, const Out& o) {
  lua_pushlstring(L, o.p, o.len);
  lua_replace(L, o.at);
}

void reverse_bytes(void* p, size_t n) {
  auto* b = static_cast<unsigned char*>(p);
  std::reverse(b, b + n);
}

// --- struct ----------------------------------------------------------------------------
//
// Formats: '<' little and '>' big endian (native by default), '!n' largest alignment
// ('!' alone: 8), ' ' ignored, 'x' a zero byte, 'b'/'B' 1-byte, 'h'/'H' 2-byte, 'l'/'L'
// and 'T' 8-byte, 'i'/'I'[n] n-byte integers (default 4, at most 32; lower case signed),
// 'f' float, 'd' double, 'c'[n] n chars (pack: c0 the whole string; unpack: c0 takes its
// length from the number read before it), 's' a zero-terminated string.

constexpr int kMaxIntBytes = 32;
constexpr size_t kMaxAlign = 8;

struct Layout {
  bool little = kLittle;
  size_t align = 1;
};

int read_count(lua_State* L, const char*& f, int dflt) {
  if (!std::isdigit(static_cast<unsigned char>(*f))) return dflt;
  int n = 0;
  while (std::isdigit(static_cast<unsigned char>(*f))) {
    const int d = *f++ - '0';
    if (n > (INT_MAX - d) / 10) luaL_error(L, "integral size overflow");
    n = n * 10 + d;
  }
  return n;
}

// The size of option `opt` (reading its count from `f`); 0 for options without one.
size_t option_size(lua_State* L, char opt, const char*& f) {
  switch (opt) {
    case 'b':
    case 'B':
    case 'x':
      return 1;
    case 'h':
    case 'H':
      return 2;
    case 'l':
    case 'L':
    case 'T':
    case 'd':
      return 8;
    case 'f':
      return 4;
    case 'c':
      return static_cast<size_t>(read_count(L, f, 1));
    case 'i':
    case 'I': {
      const int n = read_count(L, f, 4);
      if (n > kMaxIntBytes) {
        luaL_error(L, "integral size %d is larger than limit of %d", n, kMaxIntBytes);
      }
      return static_cast<size_t>(n);
    }
    default:
      return 0;
  }
}

// Padding before an item of `size` at offset `at`.
size_t padding(size_t at, const Layout& lay, char opt, size_t size) {
  if (size == 0 || opt == 'c') return 0;
  const size_t a = std::min(size, lay.align);
  return (a - (at & (a - 1))) & (a - 1);
}

void layout_option(lua_State* L, char opt, const char*& f, Layout& lay) {
  switch (opt) {
    case ' ':
      return;
    case '<':
      lay.little = true;
      return;
    case '>':
      lay.little = false;
      return;
    case '!': {
      const int a = read_count(L, f, static_cast<int>(kMaxAlign));
      if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
      lay.align = static_cast<size_t>(a);
      return;
    }
    default:
      luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
  }
}

bool is_int_option(char opt) { return std::strchr("bBhHlLTiI", opt) != nullptr && opt != '\0'; }

int struct_pack(lua_State* L) {
  const char* f = luaL_checkstring(L, 1);
  Layout lay;
  int arg = 2;
  size_t total = 0;
  lua_pushnil(L);  // (past the arguments: a missing one reads as nil, as in redis-server)
  Out o = out_open(L);
  while (*f != '\0') {
    const char opt = *f++;
    size_t size = option_size(L, opt, f);
    const size_t pad = padding(total, lay, opt, size);
    for (size_t i = 0; i < pad; ++i) out_byte(L, o, 0);
    total += pad;
    if (is_int_option(opt)) {
      const lua_Number n = luaL_checknumber(L, arg++);
      uint64_t v;
      if (n < 0) {
        v = n > -9223372036854775808.0 ? static_cast<uint64_t>(static_cast<int64_t>(n))
                                       : uint64_t{1} << 63;
      } else {
        v = n < 18446744073709551616.0 ? static_cast<uint64_t>(n) : 0;
      }
      unsigned char b[kMaxIntBytes];
      for (size_t i = 0; i < size; ++i, v >>= 8) {
        b[lay.little ? i : size - 1 - i] = static_cast<unsigned char>(v & 0xff);
      }
      out_put(L, o, b, size);
    } else if (opt == 'x') {
      out_byte(L, o, 0);
    } else if (opt == 'f') {
      auto v = static_cast<float>(luaL_checknumber(L, arg++));
      if (lay.little != kLittle) reverse_bytes(&v, sizeof v);
      out_put(L, o, &v, sizeof v);
    } else if (opt == 'd') {
      double v = luaL_checknumber(L, arg++);
      if (lay.little != kLittle) reverse_bytes(&v, sizeof v);
      out_put(L, o, &v, sizeof v);
    } else if (opt == 'c' || opt == 's') {
      size_t len;
      const char* s = luaL_checklstring(L, arg++, &len);
      if (size == 0) size = len;
      // (the argument named is the one after the string, as in redis-server)
      luaL_argcheck(L, len >= size, arg, "string too short");
      out_put(L, o, s, size);
      if (opt == 's') {
        out_byte(L, o, 0);
        ++size;
      }
    } else {
      layout_option(L, opt, f, lay);
    }
    total += size;
  }
  out_close(L, o);
  return 1;
}

int struct_unpack(lua_State* L) {
  const char* f = luaL_checkstring(L, 1);
  size_t len;
  const char* data = luaL_checklstring(L, 2, &len);
  auto pos = static_cast<size_t>(luaL_optinteger(L, 3, 1));
  luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
  --pos;
  Layout lay;
  int results = 0;
  while (*f != '\0') {
    const char opt = *f++;
    size_t size = option_size(L, opt, f);
    pos += padding(pos, lay, opt, size);
    luaL_argcheck(L, size <= len && pos <= len - size, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");
    if (is_int_option(opt)) {
      uint64_t v = 0;
      for (size_t i = 0; i < size; ++i) {
        const size_t at = lay.little ? size - 1 - i : i;
        v = v << 8 | static_cast<unsigned char>(data[pos + at]);
      }
      if (std::islower(static_cast<unsigned char>(opt))) {
        const uint64_t sign = ~uint64_t{0} << ((size * 8 - 1) & 63);
        if (v & sign) v |= sign;
        lua_pushnumber(L, static_cast<lua_Number>(static_cast<int64_t>(v)));
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(v));
      }
      ++results;
    } else if (opt == 'x') {
    } else if (opt == 'f') {
      float v;
      std::memcpy(&v, data + pos, sizeof v);
      if (lay.little != kLittle) reverse_bytes(&v, sizeof v);
      lua_pushnumber(L, v);
      ++results;
    } else if (opt == 'd') {
      double v;
      std::memcpy(&v, data + pos, sizeof v);
      if (lay.little != kLittle) reverse_bytes(&v, sizeof v);
      lua_pushnumber(L, v);
      ++results;
    } else if (opt == 'c') {
      if (size == 0) {
        if (results == 0 || !lua_isnumber(L, -1))
          luaL_error(L, "format 'c0' needs a previous size");
        size = static_cast<size_t>(lua_tonumber(L, -1));
        lua_pop(L, 1);
        --results;
        luaL_argcheck(L, size <= len && pos <= len - size, 2, "data string too short");
      }
      lua_pushlstring(L, data + pos, size);
      ++results;
    } else if (opt == 's') {
      const void* end = std::memchr(data + pos, '\0', len - pos);
      if (!end) luaL_error(L, "unfinished string in data");
      size = static_cast<size_t>(static_cast<const char*>(end) - (data + pos)) + 1;
      lua_pushlstring(L, data + pos, size - 1);
      ++results;
    } else {
      layout_option(L, opt, f, lay);
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos + 1));  // where the next record starts
  return results + 1;
}

int struct_size(lua_State* L) {
  const char* f = luaL_checkstring(L, 1);
  Layout lay;
  size_t pos = 0;
  while (*f != '\0') {
    const char opt = *f++;
    const size_t size = option_size(L, opt, f);
    pos += padding(pos, lay, opt, size);
    if (opt == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
    if (opt == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
    if (!std::isalnum(static_cast<unsigned char>(opt))) layout_option(L, opt, f, lay);
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos));
  return 1;
}

// --- cmsgpack --------------------------------------------------------------------------
//
// pack(v, ...): each value encoded, one after another. Whole numbers that fit 64 bits are
// integers in the smallest form; other numbers floats when a float holds them exactly, else
// doubles; strings str (fixstr, str8/16/32); tables whose keys are exactly 1..n arrays,
// others maps; nil, functions and tables nested past 16 levels nil.
// unpack(s): every value in s. unpack_one(s [, offset]) and unpack_limit(s, n [, offset]):
// the offset after what was read (-1 at the end), then the values.

constexpr int kMaxNesting = 16;

bool whole_int64(lua_Number n) {
  return std::isfinite(n) && n >= -9223372036854775808.0 && n < 9223372036854775808.0 &&
         static_cast<lua_Number>(static_cast<int64_t>(n)) == n;
}

bool whole_int(lua_Number n) {
  return std::isfinite(n) && n >= INT_MIN && n <= INT_MAX &&
         static_cast<lua_Number>(static_cast<int>(n)) == n;
}

void mp_int(lua_State* L, Out& o, int64_t n) {
  if (n >= 0) {
    if (n <= 127) return out_byte(L, o, static_cast<unsigned char>(n));
    if (n <= 0xff) return out_byte(L, o, 0xcc), out_be(L, o, static_cast<uint64_t>(n), 1);
    if (n <= 0xffff) return out_byte(L, o, 0xcd), out_be(L, o, static_cast<uint64_t>(n), 2);
    if (n <= 0xffffffffLL) return out_byte(L, o, 0xce), out_be(L, o, static_cast<uint64_t>(n), 4);
    return out_byte(L, o, 0xcf), out_be(L, o, static_cast<uint64_t>(n), 8);
  }
  const auto u = static_cast<uint64_t>(n);
  if (n >= -32) return out_byte(L, o, static_cast<unsigned char>(u & 0xff));
  if (n >= -128) return out_byte(L, o, 0xd0), out_be(L, o, u, 1);
  if (n >= -32768) return out_byte(L, o, 0xd1), out_be(L, o, u, 2);
  if (n >= -2147483648LL) return out_byte(L, o, 0xd2), out_be(L, o, u, 4);
  return out_byte(L, o, 0xd3), out_be(L, o, u, 8);
}

void mp_number(lua_State* L, Out& o, lua_Number n) {
  if (whole_int64(n)) return mp_int(L, o, static_cast<int64_t>(n));
  const auto f = static_cast<float>(n);
  if (static_cast<double>(f) == n) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    out_byte(L, o, 0xca);
    return out_be(L, o, bits, 4);
  }
  uint64_t bits;
  std::memcpy(&bits, &n, 8);
  out_byte(L, o, 0xcb);
  out_be(L, o, bits, 8);
}

// A header: the fix form (`fix` | n) below `fix_max`, else `b16`/`b32` (and `b8` for str).
void mp_header(lua_State* L, Out& o, uint64_t n, unsigned char fix, uint64_t fix_max, int b8,
               unsigned char b16, unsigned char b32) {
  if (n < fix_max) return out_byte(L, o, static_cast<unsigned char>(fix | n));
  if (b8 >= 0 && n <= 0xff)
    return out_byte(L, o, static_cast<unsigned char>(b8)), out_be(L, o, n, 1);
  if (n <= 0xffff) return out_byte(L, o, b16), out_be(L, o, n, 2);
  out_byte(L, o, b32);
  out_be(L, o, n, 4);
}

bool keys_are_1_to_n(lua_State* L) {
  const int top = lua_gettop(L);
  luaL_checkstack(L, 2, "in function table_is_an_array");
  int count = 0;
  lua_Number max = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    lua_Number n;
    if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 || !whole_int(n)) {
      lua_settop(L, top);
      return false;
    }
    max = std::max(max, n);
    ++count;
  }
  lua_settop(L, top);
  return max == count;
}

// Encodes the value on top of the stack, and pops it.
void mp_value(lua_State* L, Out& o, int level) {
  int t = lua_type(L, -1);
  if (t == LUA_TTABLE && level == kMaxNesting) t = LUA_TNIL;
  switch (t) {
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, -1, &n);
      mp_header(L, o, n, 0xa0, 32, 0xd9, 0xda, 0xdb);
      out_put(L, o, s, n);
      break;
    }
    case LUA_TBOOLEAN:
      out_byte(L, o, lua_toboolean(L, -1) ? 0xc3 : 0xc2);
      break;
    case LUA_TNUMBER:
      mp_number(L, o, lua_tonumber(L, -1));
      break;
    case LUA_TTABLE:
      if (keys_are_1_to_n(L)) {
        const size_t n = lua_objlen(L, -1);
        mp_header(L, o, n, 0x90, 16, -1, 0xdc, 0xdd);
        luaL_checkstack(L, 1, "in function mp_encode_lua_table_as_array");
        for (size_t j = 1; j <= n; ++j) {
          lua_pushnumber(L, static_cast<lua_Number>(j));
          lua_gettable(L, -2);
          mp_value(L, o, level + 1);
        }
      } else {
        luaL_checkstack(L, 3, "in function mp_encode_lua_table_as_map");
        uint64_t n = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          lua_pop(L, 1);
          ++n;
        }
        mp_header(L, o, n, 0x80, 16, -1, 0xde, 0xdf);
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          lua_pushvalue(L, -2);
          mp_value(L, o, level + 1);  // the key
          mp_value(L, o, level + 1);  // the value
        }
      }
      break;
    default:
      out_byte(L, o, 0xc0);
  }
  lua_pop(L, 1);
}

int mp_pack(lua_State* L) {
  const int n = lua_gettop(L);
  if (n == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
  if (!lua_checkstack(L, n)) return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
  Out o = out_open(L);
  for (int i = 1; i <= n; ++i) {
    luaL_checkstack(L, 1, "in function mp_check");
    lua_pushvalue(L, i);
    mp_value(L, o, 0);
  }
  out_close(L, o);
  return 1;
}

enum class Got { kOk, kShort, kBad };

struct Cursor {
  const unsigned char* p;
  size_t left;
};

uint64_t be(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

Got mp_decode(lua_State* L, Cursor& c);

Got mp_array(lua_State* L, Cursor& c, size_t n) {
  lua_newtable(L);
  luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
  for (size_t i = 1; i <= n; ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(i));
    if (Got g = mp_decode(L, c); g != Got::kOk) return g;
    lua_settable(L, -3);
  }
  return Got::kOk;
}

Got mp_map(lua_State* L, Cursor& c, size_t n) {
  lua_newtable(L);
  for (size_t i = 0; i < n; ++i) {
    if (Got g = mp_decode(L, c); g != Got::kOk) return g;
    if (Got g = mp_decode(L, c); g != Got::kOk) return g;
    lua_settable(L, -3);
  }
  return Got::kOk;
}

// One value from the cursor, pushed.
Got mp_decode(lua_State* L, Cursor& c) {
  if (c.left < 1) return Got::kShort;
  luaL_checkstack(L, 1, "too many return values at once; use unpack_one or unpack_limit instead.");
  const unsigned char b = c.p[0];
  auto take = [&c](size_t n) {
    c.p += n;
    c.left -= n;
  };
  // Fixed-width forms: (first byte, bytes after it).
  auto need = [&c](size_t n) { return c.left >= n; };
  switch (b) {
    case 0xc0:
      lua_pushnil(L);
      take(1);
      return Got::kOk;
    case 0xc2:
    case 0xc3:
      lua_pushboolean(L, b == 0xc3);
      take(1);
      return Got::kOk;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
      const int n = 1 << (b - 0xcc);
      if (!need(1 + n)) return Got::kShort;
      // (above 2^63 the value wraps negative, as redis-server's does)
      lua_pushinteger(L, static_cast<lua_Integer>(be(c.p + 1, n)));
      take(1 + n);
      return Got::kOk;
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
      const int n = 1 << (b - 0xd0);
      if (!need(1 + n)) return Got::kShort;
      uint64_t v = be(c.p + 1, n);
      if (n < 8 && (v >> (8 * n - 1) & 1)) v |= ~uint64_t{0} << (8 * n);
      lua_pushnumber(L, static_cast<lua_Number>(static_cast<int64_t>(v)));
      take(1 + n);
      return Got::kOk;
    }
    case 0xca: {
      if (!need(5)) return Got::kShort;
      const auto bits = static_cast<uint32_t>(be(c.p + 1, 4));
      float f;
      std::memcpy(&f, &bits, 4);
      lua_pushnumber(L, f);
      take(5);
      return Got::kOk;
    }
    case 0xcb: {
      if (!need(9)) return Got::kShort;
      const uint64_t bits = be(c.p + 1, 8);
      double d;
      std::memcpy(&d, &bits, 8);
      lua_pushnumber(L, d);
      take(9);
      return Got::kOk;
    }
    case 0xd9:
    case 0xda:
    case 0xdb: {
      const int n = 1 << (b - 0xd9);
      if (!need(1 + n)) return Got::kShort;
      const auto len = static_cast<size_t>(be(c.p + 1, n));
      if (!need(1 + n + len)) return Got::kShort;
      lua_pushlstring(L, reinterpret_cast<const char*>(c.p + 1 + n), len);
      take(1 + n + len);
      return Got::kOk;
    }
    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf: {
      const int n = b == 0xdc || b == 0xde ? 2 : 4;
      if (!need(1 + n)) return Got::kShort;
      const auto len = static_cast<size_t>(be(c.p + 1, n));
      take(1 + n);
      return b <= 0xdd ? mp_array(L, c, len) : mp_map(L, c, len);
    }
    default:
      break;
  }
  if (b < 0x80) {  // positive fixint
    lua_pushinteger(L, b);
    take(1);
    return Got::kOk;
  }
  if (b >= 0xe0) {  // negative fixint
    lua_pushinteger(L, static_cast<signed char>(b));
    take(1);
    return Got::kOk;
  }
  if ((b & 0xe0) == 0xa0) {  // fixstr
    const size_t len = b & 0x1f;
    if (!need(1 + len)) return Got::kShort;
    lua_pushlstring(L, reinterpret_cast<const char*>(c.p + 1), len);
    take(1 + len);
    return Got::kOk;
  }
  if ((b & 0xf0) == 0x90) {
    take(1);
    return mp_array(L, c, b & 0xf);
  }
  if ((b & 0xf0) == 0x80) {
    take(1);
    return mp_map(L, c, b & 0xf);
  }
  return Got::kBad;  // bin, ext and the rest: not read, as redis-server does not
}

int mp_unpack_from(lua_State* L, lua_Integer limit, lua_Integer offset) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  const bool all = limit == 0 && offset == 0;
  if (offset < 0 || limit < 0) {
    // (the second number is the input's length, as redis-server prints it)
    return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                      static_cast<int>(offset), static_cast<int>(len));
  }
  if (static_cast<size_t>(offset) > len) {
    return luaL_error(L, "Start offset %d greater than input length %d.", static_cast<int>(offset),
                      static_cast<int>(len));
  }
  if (all) limit = INT_MAX;
  Cursor c{reinterpret_cast<const unsigned char*>(s) + offset, len - static_cast<size_t>(offset)};
  int count = 0;
  for (; c.left > 0 && count < limit; ++count) {
    switch (mp_decode(L, c)) {
      case Got::kShort:
        return luaL_error(L, "Missing bytes in input.");
      case Got::kBad:
        return luaL_error(L, "Bad data format in input.");
      case Got::kOk:
        break;
    }
  }
  if (all) return count;
  luaL_checkstack(L, 1, "in function mp_unpack_full");
  lua_pushinteger(L, c.left == 0 ? -1 : static_cast<lua_Integer>(len - c.left));
  lua_insert(L, 2);
  return count + 1;
}

int mp_unpack(lua_State* L) { return mp_unpack_from(L, 0, 0); }

int mp_unpack_one(lua_State* L) {
  const lua_Integer offset = luaL_optinteger(L, 2, 0);
  lua_settop(L, 1);
  return mp_unpack_from(L, 1, offset);
}

int mp_unpack_limit(lua_State* L) {
  const lua_Integer limit = luaL_checkinteger(L, 2);
  const lua_Integer offset = luaL_optinteger(L, 3, 0);
  lua_settop(L, 1);
  return mp_unpack_from(L, limit, offset);
}

void set_fns(lua_State* L, const luaL_Reg* fns) {
  for (; fns->name; ++fns) {
    lua_pushcfunction(L, fns->func);
    lua_setfield(L, -2, fns->name);
  }
}

}  // namespace

int open_struct_lib(lua_State* L) {
  static const luaL_Reg kFns[] = {
      {"pack", struct_pack}, {"unpack", struct_unpack}, {"size", struct_size}, {nullptr, nullptr}};
  lua_newtable(L);
  set_fns(L, kFns);
  return 1;
}

int open_cmsgpack_lib(lua_State* L) {
  static const luaL_Reg kFns[] = {{"pack", mp_pack},
                                  {"unpack", mp_unpack},
                                  {"unpack_one", mp_unpack_one},
                                  {"unpack_limit", mp_unpack_limit},
                                  {nullptr, nullptr}};
  lua_newtable(L);
  set_fns(L, kFns);
  // The fields scripts find in redis-server's cmsgpack (the version names the interface
  // this one follows; the code is our own).
  const char* kInfo[][2] = {
      {"_NAME", "cmsgpack"},
      {"_VERSION", "lua-cmsgpack 0.4.0"},
      {"_COPYRIGHT", "Floodgate's implementation of lua-cmsgpack's interface"},
      {"_DESCRIPTION", "MessagePack C implementation for Lua"}};
  for (const auto& f : kInfo) {
    lua_pushstring(L, f[1]);
    lua_setfield(L, -2, f[0]);
  }
  return 1;
}

}  // namespace fg
