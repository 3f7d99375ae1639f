// The redis.* API a script sees, math.random as Redis's, the budget hook, and the sealed
// state they live in.
#include "script_run.hpp"

extern "C" {
int luaopen_cjson(lua_State* L);
}

#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>

#include "errors.hpp"
#include "lua_libs.hpp"
#include "words.hpp"

namespace fg {
namespace script {

void sha1_hex_into(std::string_view data, char* out) {
  unsigned char md[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
}

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t run_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

thread_local Run* t_run = nullptr;

void* lua_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* st = static_cast<ScriptEngine::State*>(ud);
  if (nsize == 0) {
    if (ptr) {
      st->used -= osize;
      st->heap.release(ptr, osize);
    }
    return nullptr;
  }
  if (nsize > osize) {
    if (st->used + (nsize - osize) > st->limit) {
      st->out_of_memory = true;
      return nullptr;
    }
    // A run past its deadline gets no more memory: a long C call that builds anything
    // (table.concat, gsub, cjson.decode, a compile) stops within kAllocsPerClock allocations.
    if (Run* r = t_run; r == &st->run) {
      if (r->over_budget) return nullptr;
      if (++r->allocs % kAllocsPerClock == 0 && run_clock_ns() >= r->deadline_ns) {
        r->over_budget = true;
        return nullptr;
      }
    }
  }
  void* p = ptr ? st->heap.resize(ptr, osize, nsize) : st->heap.alloc(nsize);
  if (!p) return nullptr;
  st->used = st->used - osize + nsize;
  return p;
}

// Gathers the call's arguments into the run's words; false if one is neither string nor
// number. Strings are seen where they are, on the Lua stack (which holds them until the
// command has run); numbers are written out in the run.
bool gather_args(lua_State* L, Run& r, int argc) {
  if (r.strs.size() < static_cast<size_t>(argc)) r.strs.resize(static_cast<size_t>(argc));
  r.words.clear();
  for (int j = 1; j <= argc; ++j) {
    if (lua_type(L, j) == LUA_TNUMBER) {
      // (not lua_tostring: Redis writes numbers with all their digits, "%.17g"; whole
      // numbers below 1e15 print the same as integers, without printf)
      const double d = static_cast<double>(lua_tonumber(L, j));
      char buf[64];
      int n;
      if (d == std::floor(d) && std::fabs(d) < 1e15 && !(d == 0 && std::signbit(d))) {
        n = static_cast<int>(std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(d)).ptr -
                             buf);
      } else {
        n = std::snprintf(buf, sizeof buf, "%.17g", d);
      }
      std::string& s = r.strs[static_cast<size_t>(j - 1)];
      s.assign(buf, static_cast<size_t>(n));
      r.words.emplace_back(s);
    } else if (lua_type(L, j) == LUA_TSTRING) {
      size_t n;
      const char* p = lua_tolstring(L, j, &n);
      r.words.emplace_back(p, n);
    } else {
      return false;
    }
  }
  return true;
}

int generic_call(lua_State* L, bool raise) {
  Run* r = t_run;
  if (!r) {
    push_error_table(L, err::kLuaCallOutsideScript);
    return lua_error(L);
  }
  if (r->over_budget) return luaL_error(L, "script ran past its budget");
  const int argc = lua_gettop(L);
  if (argc == 0) {
    push_error_table(L, err::kLuaNoArguments);
    return raise ? lua_error(L) : 1;
  }
  if (!gather_args(L, *r, argc)) {
    lua_pop(L, argc);
    push_error_table(L, err::kLuaArgumentTypes);
    return raise ? lua_error(L) : 1;
  }
  call_command(*r);
  lua_pop(L, argc);  // (the words were views of these)
  push_reply(L, r->reply, 0, r->resp == 3);
  if (raise && r->reply.is_error()) return lua_error(L);
  return 1;
}

int redis_call(lua_State* L) { return generic_call(L, true); }
int redis_pcall(lua_State* L) { return generic_call(L, false); }

int redis_sha1hex(lua_State* L) {
  if (lua_gettop(L) != 1) {
    push_error_table(L, err::kLuaArity);
    return lua_error(L);
  }
  size_t n = 0;
  const char* s = lua_tolstring(L, 1, &n);
  char hex[41];
  {
    const std::string h = sha1_hex(std::string_view(s ? s : "", s ? n : 0));
    std::memcpy(hex, h.data(), 40);
  }
  lua_pushlstring(L, hex, 40);
  return 1;
}

int redis_error_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    push_error_table(L, err::kLuaArityOrType);
    return 1;
  }
  const char* e = lua_tostring(L, -1);
  if (e[0] == '-') {
    push_error_table(L, e);
  } else {
    lua_pushstring(L, "-");
    lua_pushvalue(L, 1);
    lua_concat(L, 2);
    push_error_table(L, lua_tostring(L, -1));
  }
  return 1;
}

int redis_status_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    push_error_table(L, err::kLuaArityOrType);
    return 1;
  }
  lua_newtable(L);
  lua_pushstring(L, "ok");
  lua_pushvalue(L, -3);
  lua_settable(L, -3);
  return 1;
}

int redis_log(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) {
    push_error_table(L, err::kLuaLogArity);
    return lua_error(L);
  }
  if (!lua_isnumber(L, 1)) {
    push_error_table(L, err::kLuaLogLevelType);
    return lua_error(L);
  }
  const int level = static_cast<int>(lua_tonumber(L, 1));
  if (level < 0 || level > 3) {
    push_error_table(L, err::kLuaLogLevel);
    return lua_error(L);
  }
  lua_pushstring(L, "");
  for (int j = 2; j <= argc; ++j) {
    if (!lua_isstring(L, j)) continue;
    if (j != 2) lua_pushstring(L, " ");
    lua_pushvalue(L, j);
  }
  lua_concat(L, lua_gettop(L) - argc);
  const char* msg = lua_tostring(L, -1);
  static constexpr spdlog::level::level_enum kLevels[] = {
      spdlog::level::debug, spdlog::level::debug, spdlog::level::info, spdlog::level::warn};
  spdlog::log(kLevels[level], "script: {}", msg);
  return 0;
}

int redis_setresp(lua_State* L) {
  if (!t_run) {
    push_error_table(L, err::kLuaSetrespOutsideScript);
    return lua_error(L);
  }
  if (lua_gettop(L) != 1) {
    push_error_table(L, err::kLuaSetrespArity);
    return lua_error(L);
  }
  const int resp = static_cast<int>(lua_tonumber(L, 1));
  if (resp != 2 && resp != 3) {
    push_error_table(L, err::kLuaRespVersion);
    return lua_error(L);
  }
  t_run->resp = resp;
  return 0;
}

// math.random and math.randomseed: Lua's own, on a 48-bit generator of redis-server's kind
// rather than the C library's rand(), seeded afresh for every run (script_engine.cpp): what
// one run's math.randomseed sets ends with it.
uint32_t next_random(uint64_t& x) {
  x = (0x5DEECE66Dull * x + 0xB) & ((uint64_t{1} << 48) - 1);
  return static_cast<uint32_t>(x >> 17);
}

int math_random(lua_State* L) {
  Run* r = t_run;
  if (!r) return luaL_error(L, "math.random can only be called inside a script invocation");
  constexpr uint32_t kMax = 0x7fffffff;
  const lua_Number x =
      static_cast<lua_Number>(next_random(r->state->random) % kMax) / static_cast<lua_Number>(kMax);
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, x);
      return 1;
    case 1: {
      const int hi = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= hi, 1, "interval is empty");
      lua_pushnumber(L, std::floor(x * hi) + 1);
      return 1;
    }
    case 2: {
      const int lo = luaL_checkint(L, 1);
      const int hi = luaL_checkint(L, 2);
      luaL_argcheck(L, lo <= hi, 2, "interval is empty");
      lua_pushnumber(L, std::floor(x * (hi - lo + 1)) + lo);
      return 1;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
}

int math_randomseed(lua_State* L) {
  Run* r = t_run;
  if (!r) return luaL_error(L, "math.randomseed can only be called inside a script invocation");
  const auto seed = static_cast<uint32_t>(luaL_checkint(L, 1));
  r->state->random = uint64_t{seed} << 16 | 0x330E;
  return 0;
}

int redis_set_repl(lua_State* L) {  // effects are what replicates, always: nothing to choose
  if (lua_gettop(L) != 1) {
    push_error_table(L, err::kLuaSetReplArity);
    return lua_error(L);
  }
  const int flags = static_cast<int>(lua_tonumber(L, 1));
  if (flags & ~3) {
    push_error_table(
        L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    return lua_error(L);
  }
  return 0;
}

int redis_replicate_commands(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}

// The script debugger's calls, which do nothing outside it (there is no debugger).
int redis_breakpoint(lua_State* L) {
  lua_pushboolean(L, 0);
  return 1;
}
int redis_debug(lua_State*) { return 0; }

// Whether the caller may run a command: its ACL rights, on the command and its keys.
int redis_acl_check_cmd(lua_State* L) {
  Run* r = t_run;
  if (!r) {
    push_error_table(L, err::kLuaAclCheckOutsideScript);
    return lua_error(L);
  }
  const int argc = lua_gettop(L);
  if (argc == 0) {
    push_error_table(L, err::kLuaNoArguments);
    return lua_error(L);
  }
  if (!gather_args(L, *r, argc)) {
    push_error_table(L, err::kLuaArgumentTypes);
    return lua_error(L);
  }
  if (!r->callable || r->callable(r->words[0]).arity == 0) {
    lua_pop(L, argc);
    push_error_table(L, err::kLuaAclCheckUnknown);
    return lua_error(L);
  }
  const bool allowed = !r->caller || !r->caller->refuse(r->words);
  lua_pop(L, argc);
  lua_pushboolean(L, allowed ? 1 : 0);
  return 1;
}

// The pcall message handler: the error as a plain table of text ({err, source, line}),
// with where it happened, as Redis reports it. It is made here, under the budget's hook: a
// table the script raised is read now (its metamethods run as any of its code does), and
// the reply is made from the plain table after the run, when nothing of the script's runs.
// Once the budget is spent the error is not looked at (the hook may be off here: Lua calls
// the handler of an error the hook raised with hooks disabled).
int error_handler(lua_State* L) {
  if (t_run && t_run->over_budget) {
    lua_settop(L, 1);
    return 1;
  }
  lua_Debug ar;
  bool where = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
  if (where && std::strcmp(ar.what, "C") == 0) {
    where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
  }
  lua_settop(L, 1);
  lua_createtable(L, 0, 3);                  // (2: the plain table)
  auto copy_text = [&](const char* field) {  // the raised table's field, if text
    lua_getfield(L, 1, field);
    if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
      lua_setfield(L, 2, field);
    } else {
      lua_pop(L, 1);
    }
  };
  if (lua_istable(L, 1)) {
    copy_text("err");
    if (!where) copy_text("source"), copy_text("line");
  } else {
    lua_pushstring(L, "ERR ");
    if (lua_isstring(L, 1)) {
      lua_pushvalue(L, 1);
    } else if (lua_isnil(L, 1)) {
      lua_pushstring(L, "nil");
    } else if (lua_isboolean(L, 1)) {
      lua_pushstring(L, lua_toboolean(L, 1) ? "true" : "false");
    } else {
      lua_pushstring(L, luaL_typename(L, 1));
    }
    lua_concat(L, 2);
    lua_setfield(L, 2, "err");
  }
  if (where) {
    lua_pushstring(L, ar.source);
    lua_setfield(L, 2, "source");
    lua_pushnumber(L, ar.currentline);
    lua_setfield(L, 2, "line");
  }
  return 1;
}

void hook(lua_State* L, lua_Debug*) {
  Run* r = t_run;
  if (!r) return;
  if (!r->over_budget && run_clock_ns() < r->deadline_ns) return;
  r->over_budget = true;
  lua_sethook(L, hook, LUA_MASKCOUNT, 1);  // and at every instruction after: no pcall escapes
  luaL_error(L, "script ran past its budget");
}

void open_lib(lua_State* L, const char* name, lua_CFunction f) {
  lua_pushcfunction(L, f);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

void set_fn(lua_State* L, const char* name, lua_CFunction f) {
  lua_pushstring(L, name);
  lua_pushcfunction(L, f);
  lua_settable(L, -3);
}

void set_num(lua_State* L, const char* name, double v) {
  lua_pushstring(L, name);
  lua_pushnumber(L, v);
  lua_settable(L, -3);
}

std::unique_ptr<ScriptEngine::State> new_state(size_t cap) {
  auto st = std::make_unique<ScriptEngine::State>();
  st->cap = st->limit = cap;
  lua_State* L = lua_newstate(lua_alloc, st.get());
  if (!L) return nullptr;
  st->L = L;
  open_lib(L, "", luaopen_base);
  open_lib(L, LUA_TABLIBNAME, luaopen_table);
  open_lib(L, LUA_STRLIBNAME, luaopen_string);
  open_lib(L, LUA_MATHLIBNAME, luaopen_math);
  lua_pushcfunction(L, luaopen_cjson);  // (returns its table; no global of its own)
  lua_call(L, 0, 1);
  lua_setglobal(L, "cjson");
  open_bit_lib(L);
  lua_setglobal(L, "bit");
  open_struct_lib(L);
  lua_setglobal(L, "struct");
  open_cmsgpack_lib(L);
  lua_setglobal(L, "cmsgpack");
  lua_getglobal(L, "math");
  set_fn(L, "random", math_random);
  set_fn(L, "randomseed", math_randomseed);
  lua_pop(L, 1);
  lua_newtable(L);
  set_fn(L, "call", redis_call);
  set_fn(L, "pcall", redis_pcall);
  set_fn(L, "sha1hex", redis_sha1hex);
  set_fn(L, "error_reply", redis_error_reply);
  set_fn(L, "status_reply", redis_status_reply);
  set_fn(L, "log", redis_log);
  set_fn(L, "setresp", redis_setresp);
  set_fn(L, "set_repl", redis_set_repl);
  set_fn(L, "replicate_commands", redis_replicate_commands);
  set_fn(L, "breakpoint", redis_breakpoint);
  set_fn(L, "debug", redis_debug);
  set_fn(L, "acl_check_cmd", redis_acl_check_cmd);
  lua_pushstring(L, REDIS_API_VERSION);
  lua_setfield(L, -2, "REDIS_VERSION");
  set_num(L, "REDIS_VERSION_NUM", REDIS_API_VERSION_NUM);
  set_num(L, "LOG_DEBUG", 0);
  set_num(L, "LOG_VERBOSE", 1);
  set_num(L, "LOG_NOTICE", 2);
  set_num(L, "LOG_WARNING", 3);
  set_num(L, "REPL_NONE", 0);
  set_num(L, "REPL_AOF", 1);
  set_num(L, "REPL_SLAVE", 2);
  set_num(L, "REPL_REPLICA", 2);
  set_num(L, "REPL_ALL", 3);
  lua_setglobal(L, "redis");
  lua_pushcfunction(L, error_handler);
  lua_setfield(L, LUA_REGISTRYINDEX, "fg_error_handler");
  bound_long_calls(L);
  seal_sandbox(L, &st->marks);
  return st;
}

// KEYS or ARGV: words [from, to) as a table of strings.
void set_array(lua_State* L, const char* name, const std::vector<std::string_view>& a, size_t from,
               size_t to) {
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  lua_pushstring(L, name);
  lua_createtable(L, static_cast<int>(to - from), 0);
  for (size_t j = from; j < to; ++j) {
    lua_pushlstring(L, a[j].data(), a[j].size());
    lua_rawseti(L, -2, static_cast<int>(j - from + 1));
  }
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

}  // namespace script
}  // namespace fg
