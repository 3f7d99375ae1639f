// The `bit` library scripts find in Redis (LuaBitOp 1.0.2's interface: tobit, bnot, band,
// bor, bxor, lshift, rshift, arshift, rol, ror, bswap, tohex), our own rather than Debian's
// lua-bitop: that package's bit.tohex writes past its buffer for a digit count of -2^31
// (CVE-2024-31449), which redis-server fixed in its own copy. Every function here is
// defined for every input: shifts and rotations by any count, tohex by any count.
//
// A number becomes 32 bits as LuaBitOp makes it: the double plus 2^52 + 2^51, whose low
// word is then the number rounded to an integer and taken modulo 2^32 (for |n| < 2^51; past
// that the same arithmetic keeps whatever low bits the sum has). Results are signed 32-bit
// numbers.
#include <cstdint>
#include <cstring>

#include "lua_libs.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace fg {

namespace {

// Argument `idx` as 32 bits (LuaBitOp's barg): anything Lua reads as a number (a numeric
// string too); anything else is "number expected".
uint32_t bits_arg(lua_State* L, int idx) {
  double n = lua_tonumber(L, idx);
  n += 6755399441055744.0;  // 2^52 + 2^51: the integer part lands in the low word
  uint64_t raw;
  std::memcpy(&raw, &n, sizeof raw);
  const auto b = static_cast<uint32_t>(raw);
  if (b == 0 && !lua_isnumber(L, idx)) luaL_typerror(L, idx, "number");
  return b;
}

int bits_ret(lua_State* L, uint32_t b) {
  lua_pushnumber(L, static_cast<lua_Number>(static_cast<int32_t>(b)));
  return 1;
}

// The shift count: its low five bits, as LuaBitOp takes it.
uint32_t count_arg(lua_State* L, int idx) { return bits_arg(L, idx) & 31; }

int bit_tobit(lua_State* L) { return bits_ret(L, bits_arg(L, 1)); }
int bit_bnot(lua_State* L) { return bits_ret(L, ~bits_arg(L, 1)); }

template <class Op>
int bit_fold(lua_State* L, Op op) {
  uint32_t b = bits_arg(L, 1);
  for (int i = lua_gettop(L); i > 1; --i) b = op(b, bits_arg(L, i));
  return bits_ret(L, b);
}
int bit_band(lua_State* L) {
  return bit_fold(L, [](uint32_t a, uint32_t b) { return a & b; });
}
int bit_bor(lua_State* L) {
  return bit_fold(L, [](uint32_t a, uint32_t b) { return a | b; });
}
int bit_bxor(lua_State* L) {
  return bit_fold(L, [](uint32_t a, uint32_t b) { return a ^ b; });
}

int bit_lshift(lua_State* L) {
  const uint32_t b = bits_arg(L, 1);
  return bits_ret(L, b << count_arg(L, 2));
}
int bit_rshift(lua_State* L) {
  const uint32_t b = bits_arg(L, 1);
  return bits_ret(L, b >> count_arg(L, 2));
}
int bit_arshift(lua_State* L) {
  const auto b = static_cast<int32_t>(bits_arg(L, 1));
  const uint32_t n = count_arg(L, 2);
  // (an arithmetic shift written without relying on how >> treats a negative number)
  const uint32_t shifted = static_cast<uint32_t>(b) >> n;
  const uint32_t sign = b < 0 && n > 0 ? ~(~uint32_t{0} >> n) : 0;
  return bits_ret(L, shifted | sign);
}
uint32_t rotate_left(uint32_t b, uint32_t n) { return n == 0 ? b : (b << n) | (b >> (32 - n)); }
int bit_rol(lua_State* L) {
  const uint32_t b = bits_arg(L, 1);
  return bits_ret(L, rotate_left(b, count_arg(L, 2)));
}
int bit_ror(lua_State* L) {
  const uint32_t b = bits_arg(L, 1);
  return bits_ret(L, rotate_left(b, (32 - count_arg(L, 2)) & 31));
}
int bit_bswap(lua_State* L) { return bits_ret(L, __builtin_bswap32(bits_arg(L, 1))); }

// tohex(x [, n]): the low |n| hex digits of x (8 when n is absent; at most 8), upper case
// when n < 0. Redis's fixed rule for n = -2^31 (whose negation does not fit): -(2^31 - 1).
int bit_tohex(lua_State* L) {
  uint32_t b = bits_arg(L, 1);
  int64_t n = lua_isnone(L, 2) ? 8 : static_cast<int32_t>(bits_arg(L, 2));
  const char* digits = "0123456789abcdef";
  if (n < 0) {
    n = -n;
    digits = "0123456789ABCDEF";
  }
  if (n > 8) n = 8;
  char buf[8];
  for (int64_t i = n; --i >= 0;) {
    buf[i] = digits[b & 15];
    b >>= 4;
  }
  lua_pushlstring(L, buf, static_cast<size_t>(n));
  return 1;
}

}  // namespace

int open_bit_lib(lua_State* L) {
  static const luaL_Reg kFns[] = {
      {"tobit", bit_tobit},   {"bnot", bit_bnot},       {"band", bit_band},
      {"bor", bit_bor},       {"bxor", bit_bxor},       {"lshift", bit_lshift},
      {"rshift", bit_rshift}, {"arshift", bit_arshift}, {"rol", bit_rol},
      {"ror", bit_ror},       {"bswap", bit_bswap},     {"tohex", bit_tohex},
      {nullptr, nullptr}};
  lua_newtable(L);
  for (const luaL_Reg* f = kFns; f->name; ++f) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  return 1;
}

}  // namespace fg
