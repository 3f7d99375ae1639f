// The script sandbox: what a script sees as its globals, and what it may not change. One Lua
// state serves every script and every user on a shard, so nothing a run does may outlive it
// (a replaced global, a library setting, a stopped collector) or run in someone else's run.
#pragma once
#include <cstddef>

struct lua_State;

namespace fg {

// What a run changed that would outlive it, to be put back when it ends (set by the
// wrapped setters; read and cleared by reset_after_run).
struct SandboxMarks {
  bool cjson = false;  // a cjson.* setting was changed
  bool gc = false;     // the collector was stopped or retuned
};

// Seals a state whose libraries are open and whose globals are set: exactly Redis 7.0's
// globals, every library and the globals read-only, scripts' globals an empty view of them,
// text-only loadstring/load, string matching bounded (pattern_cost.hpp). `marks` outlives L.
void seal_sandbox(lua_State* L, SandboxMarks* marks);

// Compiles `body` as Lua text (never precompiled bytecode) into a function whose globals
// are the sealed view, left on the stack; else Lua's error message is left there. Returns
// lua_load's code.
int load_sealed(lua_State* L, const char* body, size_t len, const char* chunkname);

// Puts back what the run changed that outlives it (cjson's settings, the collector's).
void reset_after_run(lua_State* L, SandboxMarks& marks);

}  // namespace fg
