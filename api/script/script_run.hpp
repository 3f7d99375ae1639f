// Inside the script engine: a run's state, a shard's Lua state, and what the engine's
// files share (script_engine.cpp runs scripts; redis_api.cpp is the redis.* API and the
// sealed state it lives in; lua_reply.cpp converts replies both ways; script_calls.cpp
// runs what redis.call asks). Included only by those files.
//
// Lua is C: its errors are longjmps. The functions Lua calls (redis.call and the rest) keep
// no C++ object with a destructor alive in their own frame where Lua may raise an error:
// what they build lives in the run (Run) or in a callee that has returned.
#pragma once
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data_reply.hpp"
#include "entry_snapshot.hpp"
#include "lua_heap.hpp"
#include "sandbox.hpp"
#include "script_engine.hpp"
#include "shard.hpp"

namespace fg {
namespace script {

// A script's run: what redis.call needs, and what undoes its writes if it is aborted.
struct Run {
  ScriptEngine::State* state = nullptr;
  const Step* step = nullptr;
  int64_t now_ns = 0;
  size_t shards = 1;
  bool cluster = false;
  bool read_only = false;
  bool allow_cross_slot = false;  // its shebang's allow-cross-slot-keys (cluster)
  int slot = -1;                  // cluster: the slot the script's keys are in, once known
  int64_t deadline_ns = 0;
  bool over_budget = false;  // past its deadline: every instruction and allocation fails
  uint32_t long_calls = 0;   // calls of the bounded library functions (long_calls.cpp)
  uint32_t allocs = 0;       // growing allocations, for the allocator's look at the clock
  int resp = 2;              // the replies redis.call gives the script (redis.setresp)
  ScriptEngine::Callable callable = nullptr;
  const ScriptEngine::Publish* publish = nullptr;  // PUBLISH / SPUBLISH (null: refused)
  const ScriptCaller* caller = nullptr;  // whose rights redis.call runs with (null: anyone's)
  uint16_t account = 0;                  // whose the keys it makes are (accounts.hpp)
  // The command redis.call is running: its words, and its reply.
  std::vector<std::string> strs;
  std::vector<std::string_view> words;
  std::vector<std::string_view> part;
  DataReply reply;
  DataReply part_reply;
  // Keys as they were before the script first changed them.
  struct Saved {
    Shard* shard;
    std::string key;
    bool had;
    EntrySnapshot before;
  };
  std::vector<Saved> saved;     // (a script writes few keys: looked through in order)
  std::vector<uint32_t> slots;  // the current command's keys' slots

  // Ready for a new run; the buffers keep their capacity from earlier runs.
  void reset() {
    slot = -1;
    over_budget = false;
    long_calls = allocs = 0;
    resp = 2;
    saved.clear();
  }
};

constexpr int kHookEvery = 1000;            // instructions between budget checks
constexpr uint32_t kAllocsPerClock = 64;    // growing allocations between budget checks
constexpr size_t kAfterRunSlack = 1 << 20;  // heap past the cap for a run's aftermath
constexpr int kMaxReplyDepth = 200;

int64_t mono_ns();
// The clock a run's budget is counted on: the CPU time of the thread running it, so a
// script the OS sets aside (a loaded machine, a shared core) does not spend its budget
// waiting; a script busy for its budget is stopped all the same.
int64_t run_clock_ns();
extern thread_local Run* t_run;  // the run on this thread, for the functions Lua calls
void sha1_hex_into(std::string_view data, char* out);  // 40 hex digits at out

// lua_reply.cpp
// Redis's error table: {err = "CODE message"} ("ERR" when the text has no code of its own).
void push_error_table(lua_State* L, std::string_view text);
// A reply as Lua sees it (RESP2 or RESP3 shapes); returns the index after item i.
size_t push_reply(lua_State* L, const DataReply& r, size_t i, bool resp3);
// The value on top of the stack as a reply, with Redis's conversion rules.
void to_reply(lua_State* L, DataReply& out, int depth, bool resp3);

// script_calls.cpp: what redis.call runs: r.words in, r.reply out.
void call_command(Run& r);

// long_calls.cpp: table.sort, string.rep, cjson.encode and xpcall held to the run's budget
// and its heap's room (in a state whose libraries are open, before it is sealed).
void bound_long_calls(lua_State* L);

// redis_api.cpp
int error_handler(lua_State* L);      // the pcall message handler
void hook(lua_State* L, lua_Debug*);  // the budget check every kHookEvery instructions
void set_array(lua_State* L, const char* name, const std::vector<std::string_view>& words,
               size_t from, size_t to);
// A sealed state with Redis's libraries and the redis.* API, its heap capped at `cap`.
std::unique_ptr<ScriptEngine::State> new_state(size_t cap);

}  // namespace script

struct ScriptEngine::State {
  LuaHeap heap;  // (declared first: the state is closed before its heap goes)
  lua_State* L = nullptr;
  size_t used = 0;
  size_t cap = 0;
  size_t limit = 0;  // what an allocation may reach: cap, or less while clients' room is short
  bool out_of_memory = false;  // an allocation was refused during the current run
  uint64_t generation = 0;     // the cache's, when this state was made
  std::shared_ptr<const ScriptCache::Catalog> catalog;  // held: refreshed per run
  uint64_t catalog_version = 0;
  uint32_t runs = 0;
  // math.random's generator (48 bits, as redis-server's), seeded afresh for each run from
  // `seeds`, which no script reaches: a run's math.randomseed ends with the run.
  uint64_t random = kRandomStart;
  uint64_t seeds = kRandomStart;
  SandboxMarks marks;  // what the current run changed that outlives it
  script::Run run;     // the current run's scratch, reused
  static constexpr uint64_t kRandomStart = 0x1234ABCD330E;
  ~State() {
    if (L) lua_close(L);
  }
};

}  // namespace fg
