// The Lua engine choice, measured: the token-bucket script (token_bucket.lua) run the way
// the node runs a script (KEYS and ARGV made per run, redis.call a C function building its
// reply tables, a count hook every 1000 instructions), against a stand-in for the keys.
// Built twice by run-lua-bench, against PUC Lua 5.1 and against LuaJIT; prints ns per run.
//   lua_engine <script.lua> <runs>
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#if __has_include(<luajit.h>)
#include <luajit.h>
#endif
}

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string g_tokens, g_ts;  // the one hash the script reads and writes
long long g_clock_us = 1'700'000'000'000'000;

// redis.call for the commands the script sends: TIME, HMGET, HSET, PEXPIRE.
int call(lua_State* L) {
  size_t n;
  const char* cmd = lua_tolstring(L, 1, &n);
  if (std::strcmp(cmd, "TIME") == 0) {
    g_clock_us += 1000;
    lua_createtable(L, 2, 0);
    lua_pushstring(L, std::to_string(g_clock_us / 1'000'000).c_str());
    lua_rawseti(L, -2, 1);
    lua_pushstring(L, std::to_string(g_clock_us % 1'000'000).c_str());
    lua_rawseti(L, -2, 2);
    return 1;
  }
  if (std::strcmp(cmd, "HMGET") == 0) {
    lua_createtable(L, 2, 0);
    for (int i = 0; i < 2; ++i) {
      const std::string& v = i == 0 ? g_tokens : g_ts;
      if (v.empty()) {
        lua_pushboolean(L, 0);
      } else {
        lua_pushlstring(L, v.data(), v.size());
      }
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  if (std::strcmp(cmd, "HSET") == 0) {
    g_tokens = lua_tostring(L, 4);
    g_ts = lua_tostring(L, 6);
    lua_pushnumber(L, 0);
    return 1;
  }
  lua_pushnumber(L, 1);  // PEXPIRE
  return 1;
}

void hook(lua_State*, lua_Debug*) {}

void set_array(lua_State* L, const char* name, const char* const* words, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; ++i) {
    lua_pushstring(L, words[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setglobal(L, name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lua_engine <script.lua> <runs>\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream body;
  body << in.rdbuf();
  const std::string script = body.str();
  const long runs = std::stol(argv[2]);

  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
#ifdef LUAJIT_VERSION
  // LUA_ENGINE_JIT=off: LuaJIT's interpreter alone (compiled traces skip the count hook
  // that enforces a script's budget).
  if (const char* mode = std::getenv("LUA_ENGINE_JIT"); mode && std::strcmp(mode, "off") == 0) {
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
  }
#endif
  lua_newtable(L);
  lua_pushcfunction(L, call);
  lua_setfield(L, -2, "call");
  lua_setglobal(L, "redis");
  if (luaL_loadbuffer(L, script.data(), script.size(), "@user_script") != 0) {
    std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "f");
  const char* keys[] = {"tb:1"};
  const char* args[] = {"100", "100"};
  long taken = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < runs; ++i) {
    set_array(L, "KEYS", keys, 1);
    set_array(L, "ARGV", args, 2);
    lua_getfield(L, LUA_REGISTRYINDEX, "f");
    lua_sethook(L, hook, LUA_MASKCOUNT, 1000);
    if (lua_pcall(L, 0, 1, 0) != 0) {
      std::fprintf(stderr, "%s\n", lua_tostring(L, -1));
      return 1;
    }
    lua_sethook(L, nullptr, 0, 0);
    taken += static_cast<long>(lua_tonumber(L, -1));
    lua_settop(L, 0);
    if (i % 50 == 0) lua_gc(L, LUA_GCSTEP, 50);
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.0f ns per run (%ld of %ld taken)\n", ns / runs, taken, runs);
  lua_close(L);
  return 0;
}
