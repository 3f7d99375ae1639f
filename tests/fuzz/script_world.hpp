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

// One attempt: `form` picks how (assignment, rawset, setmetatable, loadstring'd code, a
// coroutine, a bare global), the others index the lists above (taken modulo their sizes).
inline std::string attempt(uint64_t form, uint64_t target, uint64_t name, uint64_t value) {
  const std::string& t = targets()[target % targets().size()];
  const std::string& k = names()[name % names().size()];
  const std::string& v = values()[value % values().size()];
  switch (form % 6) {
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

}  // namespace fg::script_world
