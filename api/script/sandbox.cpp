// The sandbox a script runs in. PUC Lua 5.1 has no read-only tables (Redis patches its Lua
// for them), so:
// - The real globals table (G) is never a script's environment. A script's functions, and
//   whatever loadstring/load make, have an empty table (E) as their globals: reading falls
//   through to G, every write is refused, since E stays empty and rawset refuses it. _G is E.
// - Each library global is an empty view whose metatable reads through to the library and
//   refuses writes; rawset and setmetatable refuse locked tables (kept in the registry's
//   "fg_locked"), and next, pairs and rawget see through a view to what it shows.
// - The globals are exactly Redis 7.0's: no setfenv/getfenv (they would swap E for
//   another table), no newproxy (userdata finalizers run outside any budget).
// - State that outlives a run behind a setter (cjson's settings, the collector's) is put
//   back after any run that changed it.
// - String matching runs in C, where no instruction hook can stop it: a match whose worst
//   case is past kMaxPatternSteps is refused before it starts.
#include "sandbox.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "pattern_cost.hpp"

namespace fg {

namespace {

constexpr const char* kLocked = "fg_locked";
constexpr const char* kEnv = "fg_env";
constexpr const char* kCjsonDefaults = "fg_cjson_defaults";
constexpr const char* kCjsonSetters = "fg_cjson_setters";

// Redis 7.0's globals, as `for k in pairs(_G)` lists them there (KEYS and ARGV are set per run).
// clang-format off
constexpr const char* kGlobals[] = {
    "_G", "_VERSION", "__redis__err__handler", "assert", "bit", "cjson", "cmsgpack",
    "collectgarbage", "coroutine", "error", "gcinfo", "getmetatable", "ipairs", "load",
    "loadstring", "math", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "redis",
    "select", "setmetatable", "string", "struct", "table", "tonumber", "tostring", "type",
    "unpack", "xpcall"};
// clang-format on

// cjson's settings, each a function that answers the setting when called bare.
constexpr const char* kCjsonSettings[] = {"encode_sparse_array",   "encode_max_depth",
                                          "decode_max_depth",      "encode_number_precision",
                                          "encode_keep_buffer",    "encode_invalid_numbers",
                                          "decode_invalid_numbers"};

// Globals are read-only, and reading one that does not exist is an error (Redis's texts).
int global_read(lua_State* L) {
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    lua_tostring(L, 2));
}
int global_write(lua_State* L) { return luaL_error(L, "Attempt to modify a readonly table"); }

bool locked(lua_State* L, int idx) {
  lua_getfield(L, LUA_REGISTRYINDEX, kLocked);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  const bool yes = lua_toboolean(L, -1) != 0;
  lua_pop(L, 2);
  return yes;
}

// Locks the table at `idx`; `seen` (an index, or 0) is what reading it sees.
void lock(lua_State* L, int idx, int seen = 0) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  seen = seen < 0 ? lua_gettop(L) + seen + 1 : seen;
  lua_getfield(L, LUA_REGISTRYINDEX, kLocked);
  lua_pushvalue(L, idx);
  if (seen) {
    lua_pushvalue(L, seen);
  } else {
    lua_pushboolean(L, 1);
  }
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

// next and rawget as Lua's (an upvalue), on what a view shows when given the view.
int see_through(lua_State* L) {
  if (lua_type(L, 1) == LUA_TTABLE) {
    lua_getfield(L, LUA_REGISTRYINDEX, kLocked);
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    if (lua_istable(L, -1)) {
      lua_replace(L, 1);
      lua_pop(L, 1);
    } else {
      lua_pop(L, 2);
    }
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// pairs: Lua's own next (upvalue 1) for a table, the one above (upvalue 2) for a view.
int see_through_pairs(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushvalue(L, lua_upvalueindex(locked(L, 1) ? 2 : 1));
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

// rawset and setmetatable as Lua's (its own, an upvalue), except on a locked table.
int guarded(lua_State* L) {
  if (lua_type(L, 1) == LUA_TTABLE && locked(L, 1)) {
    lua_pushstring(L, "Attempt to modify a readonly table");  // (no position: Redis gives none)
    return lua_error(L);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

void wrap_global(lua_State* L, const char* name, lua_CFunction f) {
  lua_getglobal(L, name);
  lua_pushcclosure(L, f, 1);
  lua_setglobal(L, name);
}

// A metatable that refuses writes (Attempt to modify a readonly table), keeps itself from
// being changed or read, and sends reads to the value on top of the stack (a table to read
// through to, or a function), which it replaces.
void push_locking_metatable(lua_State* L) {
  lua_createtable(L, 0, 3);
  lua_insert(L, -2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, global_write);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
}

// A read-only view of the table at the top of the stack, which it replaces.
void read_only_view(lua_State* L) {
  lua_newtable(L);  // (table, view)
  lua_pushvalue(L, -2);
  push_locking_metatable(L);
  lua_setmetatable(L, -2);
  lock(L, -1, -2);
  lua_replace(L, -2);
}

// --- loading text only, into the sealed globals -----------------------------------------

// Lua takes a chunk starting with ESC as precompiled bytecode, which can corrupt memory. A
// leading space makes every chunk text (Redis's Lua reads only text: a dump gets the same
// "unexpected symbol" error here); lines are unchanged.
struct TextReader {
  const char* body;
  size_t len;
  int stage = 0;
};

const char* read_text(lua_State*, void* ud, size_t* size) {
  auto* r = static_cast<TextReader*>(ud);
  switch (r->stage++) {
    case 0:
      *size = 1;
      return " ";
    case 1:
      *size = r->len;
      return r->body;
    default:
      *size = 0;
      return nullptr;
  }
}

void enclose(lua_State* L) {  // the function on top gets the sealed globals
  lua_getfield(L, LUA_REGISTRYINDEX, kEnv);
  lua_setfenv(L, -2);
}

// What loadstring and load answer for lua_load's `rc`: the sealed function, or nil and
// Lua's message.
int loaded(lua_State* L, int rc) {
  if (rc != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  enclose(L);
  return 1;
}

// loadstring(s [, chunkname]), as Lua's but text only and sealed.
int sealed_loadstring(lua_State* L) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  const char* name = luaL_optstring(L, 2, s);
  TextReader r{s, len};
  return loaded(L, lua_load(L, read_text, &r, name));
}

// load(f [, chunkname]): the pieces f returns, as Lua's load reads them, text only, sealed.
struct PieceReader {
  bool first = true;
};

const char* read_pieces(lua_State* L, void* ud, size_t* size) {
  auto* r = static_cast<PieceReader*>(ud);
  if (r->first) {
    r->first = false;
    *size = 1;
    return " ";
  }
  luaL_checkstack(L, 2, "too many nested functions");
  lua_pushvalue(L, 1);
  lua_call(L, 0, 1);
  if (lua_isnil(L, -1)) {
    *size = 0;
    return nullptr;
  }
  if (!lua_isstring(L, -1)) luaL_error(L, "reader function must return a string");
  lua_replace(L, 3);  // (kept alive while Lua reads it)
  return lua_tolstring(L, 3, size);
}

int sealed_load(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const char* name = luaL_optstring(L, 2, "=(load)");
  lua_settop(L, 3);
  PieceReader r;
  return loaded(L, lua_load(L, read_pieces, &r, name));
}

// --- bounded string matching --------------------------------------------------------------

enum MatchFn { kFind, kMatch, kGmatch, kGsub };

bool has_specials(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::strchr("^$*+?.([%-", p[i]) && p[i] != '\0') return true;
  return false;
}

// string.find/match/gmatch/gsub (the original is upvalue 1, which one upvalue 2): refused
// when the match's worst case is past the bound; else the original, untouched.
int bounded_match(lua_State* L) {
  const auto fn = static_cast<MatchFn>(lua_tointeger(L, lua_upvalueindex(2)));
  if (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING) {
    size_t n, pn;
    lua_tolstring(L, 1, &n);
    const char* p = lua_tolstring(L, 2, &pn);
    const bool plain = fn == kFind && (lua_toboolean(L, 4) || !has_specials(p, pn));
    if (!plain) {
      size_t from = 0;
      if ((fn == kFind || fn == kMatch) && lua_type(L, 3) == LUA_TNUMBER) {
        auto init = static_cast<ptrdiff_t>(lua_tointeger(L, 3));
        if (init < 0) init += static_cast<ptrdiff_t>(n) + 1;
        if (init > 1) from = static_cast<size_t>(init - 1);
      }
      const size_t subject = from < n ? n - from : 0;
      const double steps =
          pattern_steps(std::string_view(p, pn), subject,
                        fn == kGmatch ? PatternUse::kGmatch : PatternUse::kAnchorable);
      if (steps > kMaxPatternSteps) {
        return luaL_error(L, "pattern too complex for a subject of %d bytes", static_cast<int>(n));
      }
    }
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

void bound_matching(lua_State* L) {
  lua_getglobal(L, "string");
  const struct {
    const char* name;
    MatchFn fn;
  } fns[] = {{"find", kFind}, {"match", kMatch}, {"gmatch", kGmatch}, {"gsub", kGsub}};
  for (const auto& f : fns) {
    lua_getfield(L, -1, f.name);
    lua_pushinteger(L, f.fn);
    lua_pushcclosure(L, bounded_match, 2);
    lua_setfield(L, -2, f.name);
  }
  lua_pop(L, 1);
}

// --- settings that outlive a run -----------------------------------------------------------

// A cjson setter (upvalue 1) called with arguments marks the run (upvalue 2).
int marked_setter(lua_State* L) {
  if (lua_gettop(L) > 0) {
    static_cast<SandboxMarks*>(lua_touserdata(L, lua_upvalueindex(2)))->cjson = true;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Remembers cjson's settings as they are now (its defaults) and wraps their setters.
void mark_cjson(lua_State* L, SandboxMarks* marks) {
  lua_newtable(L);  // name -> {values}
  const int defaults = lua_gettop(L);
  lua_newtable(L);  // name -> the setter itself
  const int setters = lua_gettop(L);
  lua_getglobal(L, "cjson");
  const int cjson = lua_gettop(L);
  for (const char* name : kCjsonSettings) {
    lua_getfield(L, cjson, name);
    if (!lua_isfunction(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, setters, name);
    const int base = lua_gettop(L);
    lua_pushvalue(L, -1);
    lua_call(L, 0, LUA_MULTRET);
    const int got = lua_gettop(L) - base;
    lua_createtable(L, got, 0);
    for (int i = got; i >= 1; --i) {
      lua_insert(L, -2);
      lua_rawseti(L, -2, i);
    }
    lua_setfield(L, defaults, name);
    lua_pushlightuserdata(L, marks);
    lua_pushcclosure(L, marked_setter, 2);
    lua_setfield(L, cjson, name);
  }
  lua_settop(L, setters);
  lua_setfield(L, LUA_REGISTRYINDEX, kCjsonSetters);
  lua_setfield(L, LUA_REGISTRYINDEX, kCjsonDefaults);
}

// collectgarbage as Lua's (upvalue 1); "stop", "setpause" and "setstepmul" mark the run.
int marked_collectgarbage(lua_State* L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    const std::string_view opt = lua_tostring(L, 1);
    if (opt == "stop" || opt == "setpause" || opt == "setstepmul") {
      static_cast<SandboxMarks*>(lua_touserdata(L, lua_upvalueindex(2)))->gc = true;
    }
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Leaves exactly Redis's globals in the table at the top of the stack.
void keep_only_redis_globals(lua_State* L) {
  std::vector<std::string> drop;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    const std::string_view name = lua_tostring(L, -1);
    bool keep = false;
    for (const char* g : kGlobals) keep = keep || name == g;
    if (!keep) drop.emplace_back(name);
  }
  for (const std::string& name : drop) {
    lua_pushlstring(L, name.data(), name.size());
    lua_pushnil(L);
    lua_rawset(L, -3);
  }
}

}  // namespace

void seal_sandbox(lua_State* L, SandboxMarks* marks) {
  bound_matching(L);
  mark_cjson(L, marks);
  lua_getglobal(L, "collectgarbage");
  lua_pushlightuserdata(L, marks);
  lua_pushcclosure(L, marked_collectgarbage, 2);
  lua_setglobal(L, "collectgarbage");
  lua_register(L, "loadstring", sealed_loadstring);
  lua_register(L, "load", sealed_load);
  lua_getfield(L, LUA_REGISTRYINDEX, "fg_error_handler");
  lua_setglobal(L, "__redis__err__handler");

  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kLocked);
  wrap_global(L, "rawset", guarded);
  wrap_global(L, "setmetatable", guarded);
  wrap_global(L, "rawget", see_through);
  lua_getglobal(L, "next");
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, see_through, 1);
  lua_pushvalue(L, -1);
  lua_setglobal(L, "next");
  lua_pushcclosure(L, see_through_pairs, 2);
  lua_setglobal(L, "pairs");
  for (const char* name :
       {"string", "math", "table", "coroutine", "cjson", "bit", "struct", "cmsgpack", "redis"}) {
    lua_getglobal(L, name);
    read_only_view(L);
    lua_setglobal(L, name);
  }
  lua_pushstring(L, "");
  lua_getmetatable(L, -1);  // (its __index is the string library: now the view of it)
  lua_getglobal(L, "string");
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, -1);
  read_only_view(L);  // what getmetatable("") answers
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 2);

  // G: exactly Redis's globals, locked; E: what scripts see as their globals.
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  keep_only_redis_globals(L);
  lock(L, -1);
  lua_pushcfunction(L, global_read);
  push_locking_metatable(L);
  lua_setmetatable(L, -2);
  lua_newtable(L);  // (G, E)
  lua_pushvalue(L, -2);
  push_locking_metatable(L);
  // What getmetatable(_G) answers: a read-only table, as Redis's (writing to it is refused;
  // it shows nothing, so G itself is never reachable through it).
  lua_newtable(L);
  read_only_view(L);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lock(L, -1, -2);
  lua_pushstring(L, "_G");
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_setfield(L, LUA_REGISTRYINDEX, kEnv);
  lua_pop(L, 1);
}

int load_sealed(lua_State* L, const char* body, size_t len, const char* chunkname) {
  TextReader r{body, len};
  const int rc = lua_load(L, read_text, &r, chunkname);
  if (rc == 0) enclose(L);
  return rc;
}

void reset_after_run(lua_State* L, SandboxMarks& marks) {
  if (marks.gc) {
    lua_gc(L, LUA_GCRESTART, 0);
    lua_gc(L, LUA_GCSETPAUSE, 200);  // (Lua 5.1's defaults, LUAI_GCPAUSE and LUAI_GCMUL)
    lua_gc(L, LUA_GCSETSTEPMUL, 200);
  }
  if (marks.cjson) {
    lua_getfield(L, LUA_REGISTRYINDEX, kCjsonSetters);
    lua_getfield(L, LUA_REGISTRYINDEX, kCjsonDefaults);
    for (const char* name : kCjsonSettings) {
      lua_getfield(L, -2, name);
      if (!lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        continue;
      }
      lua_getfield(L, -2, name);
      const int n = static_cast<int>(lua_objlen(L, -1));
      for (int i = 1; i <= n; ++i) lua_rawgeti(L, -i, i);
      lua_remove(L, -n - 1);
      if (lua_pcall(L, n, 0, 0) != 0) lua_pop(L, 1);  // (what it answered at the start)
    }
    lua_pop(L, 2);
  }
  marks = SandboxMarks{};
}

}  // namespace fg
