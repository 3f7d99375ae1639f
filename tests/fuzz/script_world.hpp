// What a script sees of its world, and escape attempts against it: shared by the sandbox
// tests (tests/node/sandbox_test.cpp) and the sandbox fuzzer (script_sandbox_fuzzer.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg::script_world {

// Every global's name and type, every library's fields, the strings' metatable: the same on
// redis-server and here, and the same before and after anything a script does.
inline constexpr char kWorld[] =
    "local out = {} "
    "local names = {} for k in pairs(_G) do names[#names + 1] = k end table.sort(names) "
    "for _, k in ipairs(names) do out[#out + 1] = k .. ':' .. type(_G[k]) end "
    "for _, lib in ipairs({'string', 'math', 'table', 'coroutine', 'cjson', 'bit', 'struct', "
    "'cmsgpack', 'redis'}) do "
    "  local f = {} for k, v in pairs(_G[lib]) do f[#f + 1] = k .. ':' .. type(v) end "
    "  table.sort(f) out[#out + 1] = lib .. '=' .. table.concat(f, ',') end "
    "out[#out + 1] = 'strmeta=' .. type(getmetatable('').__index) "
    "out[#out + 1] = 'fmt=' .. string.format('%d', 7) .. tostring(tonumber('8')) "
    "return out";

inline const std::vector<std::string>& targets() {
  static const std::vector<std::string> v = {
      "_G",  "string", "math",     "table", "coroutine",        "cjson",
      "bit", "struct", "cmsgpack", "redis", "getmetatable('')", "getmetatable('').__index"};
  return v;
}
inline const std::vector<std::string>& names() {
  static const std::vector<std::string> v = {"tonumber", "call",    "rep",        "find",  "encode",
                                             "x",        "__index", "__newindex", "pcall", "_G"};
  return v;
}
inline const std::vector<std::string>& values() {
  static const std::vector<std::string> v = {"1",     "nil", "{}",    "function() return 0 end",
                                             "print", "_G",  "string"};
  return v;
}

// Ways out of the budget: code that would run for ever inside an error's metamethods, an
// xpcall handler (Lua 5.1 runs one with hooks off for an error the hook raised) or one C
// call (a sort's comparisons, a repetition of nothing).
inline const std::vector<std::string>& stalls() {
  static const std::vector<std::string> v = {
      "while true do end",
      "error(setmetatable({}, {__index = function() while true do end end}))",
      "error(setmetatable({}, {__index = function(t) error(t) end}))",
      "local t = {} for i = 1, 100 do t[i] = i end "
      "table.sort(t, function(a, b) while true do end end)",
      "local _ = string.rep('', 2147483647)",
      "local _ = string.rep('x', 1e9)",
      "error('plain')",
      "local _ = 1"};
  return v;
}

// One attempt: `form` picks how (assignment, rawset, setmetatable, loadstring'd code, a
// coroutine, a bare global, a stall alone, in xpcall, in a coroutine's xpcall), the others
// index the lists above (taken modulo their sizes).
inline std::string attempt(uint64_t form, uint64_t target, uint64_t name, uint64_t value) {
  const std::string& t = targets()[target % targets().size()];
  const std::string& k = names()[name % names().size()];
  const std::string& v = values()[value % values().size()];
  const std::string& a = stalls()[name % stalls().size()];
  const std::string& b = stalls()[value % stalls().size()];
  const std::string guarded = "xpcall(function() " + a + " end, function(e) " + b + " end)";
  switch (form % 9) {
    case 6:
      return a;
    case 7:
      return guarded;
    case 8:
      return "coroutine.wrap(function() " + guarded + " end)()";
    case 0:
      return t + "['" + k + "'] = " + v;
    case 1:
      return "rawset(" + t + ", '" + k + "', " + v + ")";
    case 2:
      return "setmetatable(" + t + ", {__index = function() return 0 end})";
    case 3:
      return "loadstring(\"" + k + " = 1\")()";
    case 4:
      return "coroutine.wrap(function() " + t + "['" + k + "'] = " + v + " end)()";
    default:
      return k + " = " + v;
  }
}

// The libraries' argument edges (CVE-2024-31449 was bit.tohex(x, -2^31); Redis's copies of
// cjson, cmsgpack and struct have had overflows on sizes and counts): every function of
// `bit`, `struct`, `cjson` and `cmsgpack` called with values drawn from here.
inline const std::vector<std::string>& library_functions() {
  static const std::vector<std::string> v = {"bit.tobit",
                                             "bit.bnot",
                                             "bit.band",
                                             "bit.bor",
                                             "bit.bxor",
                                             "bit.lshift",
                                             "bit.rshift",
                                             "bit.arshift",
                                             "bit.rol",
                                             "bit.ror",
                                             "bit.bswap",
                                             "bit.tohex",
                                             "struct.pack",
                                             "struct.unpack",
                                             "struct.size",
                                             "cjson.encode",
                                             "cjson.decode",
                                             "cmsgpack.pack",
                                             "cmsgpack.unpack",
                                             "cmsgpack.unpack_one",
                                             "cmsgpack.unpack_limit",
                                             "cjson.encode_keep_buffer",
                                             "cjson.decode_max_depth",
                                             "cjson.encode_max_depth"};
  return v;
}
inline const std::vector<std::string>& library_values() {
  static const std::vector<std::string> v = {"-2147483648",
                                             "2147483647",
                                             "2147483648",
                                             "-2147483649",
                                             "4294967295",
                                             "4294967296",
                                             "-1",
                                             "0",
                                             "1",
                                             "31",
                                             "32",
                                             "33",
                                             "-33",
                                             "2^53",
                                             "-2^53",
                                             "2^63",
                                             "1/0",
                                             "-1/0",
                                             "0/0",
                                             "0.5",
                                             "-0.5",
                                             "1e308",
                                             "nil",
                                             "true",
                                             "{}",
                                             "{1, 2, 3}",
                                             "{a = {b = {}}}",
                                             "string.rep('[', 2000)",
                                             "string.rep('{\"a\":', 1200)",
                                             "'>i40'",
                                             "'!17i'",
                                             "'c2147483647'",
                                             "'c0'",
                                             "'i9'",
                                             "'s'",
                                             "'x'",
                                             "'>bhilqfd'",
                                             "'<!8I3i7'",
                                             "string.rep('\\255', 9)",
                                             "'\\220\\255\\255\\255\\255'",
                                             "'\\221\\255\\255\\255\\255'",
                                             "'\\219\\255\\255\\255\\255'",
                                             "'\\198\\255\\255\\255\\255'",
                                             "'\\223\\127\\255\\255\\255'",
                                             "string.rep('\\145', 300)",
                                             "'\\193'",
                                             "'\\217\\255'",
                                             "''",
                                             "cmsgpack.pack(1, 2, 3)",
                                             "struct.pack('i4', 7)"};
  return v;
}

// One library call: `fn` picks the function, `a`, `b`, `c` its arguments (and how many it
// gets); pcall'd, so an error is an answer and only a crash, a leak or a hang is a finding.
inline std::string library_call(uint64_t fn, uint64_t a, uint64_t b, uint64_t c) {
  const std::string& f = library_functions()[fn % library_functions().size()];
  const auto& v = library_values();
  std::string args = v[a % v.size()];
  if (b % 4 != 0) args += ", " + v[b % v.size()];
  if (c % 3 == 1) args += ", " + v[c % v.size()];
  return "pcall(" + f + ", " + args + ")";
}

}  // namespace fg::script_world
