// The library calls a script can make that run long inside one C call, where the budget's
// instruction hook never fires, each held to the run's budget or its heap's room:
// - table.sort: numbers alone or strings alone are sorted in n log n (their order is
//   unique: Lua's answer whatever the algorithm); a comparator written in Lua is under the
//   hook already; anything else compares through a C function that looks at the clock
//   every kClockEvery calls (Lua's algorithm, its order and errors). So an input ordered
//   against the quicksort costs at most the budget.
// - string.rep: a result past the heap's room is refused before any byte is copied, and
//   an empty one is not built by looping.
// - cjson.encode: its output is built outside the Lua heap, so the value is walked first
//   (its strings' bytes, a table reached twice counted twice, as cjson writes it) and refused
//   past the heap's room or the budget.
// - cjson.decode, cmsgpack.unpack, redis.sha1hex: a string too long to read in what is
//   left of the budget, even at 2 GB/s, is refused at once; shorter ones take at most a
//   few budgets.
// - xpcall: Lua 5.1 turns hooks off while a handler runs for an error the hook raised, so a
//   handler could loop forever; here the handler runs after the call has unwound, under the
//   hook like any code, and not at all once the budget is spent.
// Everything else long is bounded by the allocator (lua_alloc): a run past its deadline
// gets no more memory, so a C call that builds anything (concat, gsub, cjson.decode, a
// compile) stops within a few allocations of it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "script_run.hpp"

namespace fg {
namespace script {

namespace {

constexpr uint32_t kClockEvery = 64;     // comparisons between looks at the clock
constexpr size_t kSmallSort = 128;       // at most kSmallSort² / 2 comparisons, however ordered
constexpr int kMaxHandlerNesting = 200;  // a handler failing on its own errors, as Lua's C stack
// No call wrapped by `paced` gets through its input faster than this: one whose input could
// not be read in what is left of the budget even at this speed is refused before it starts.
constexpr int64_t kBytesPerNsAtMost = 2;

// Raises the budget's error when the run is past its deadline (looked at every
// kClockEvery calls).
void check_budget(lua_State* L) {
  Run* r = t_run;
  if (!r || (++r->long_calls % kClockEvery != 0 && !r->over_budget)) return;
  if (!r->over_budget && run_clock_ns() < r->deadline_ns) return;
  r->over_budget = true;
  luaL_error(L, "script ran past its budget");
}

// What the heap may still grow by in this run.
size_t heap_room() {
  Run* r = t_run;
  if (!r || !r->state) return SIZE_MAX;
  const ScriptEngine::State& st = *r->state;
  return st.limit > st.used ? st.limit - st.used : 0;
}

int out_of_memory(lua_State* L) {
  if (t_run && t_run->state) t_run->state->out_of_memory = true;
  return luaL_error(L, "not enough memory");
}

// A wrapped library function runs the original in its own frame (so an error the original
// raises names the script's line, as it did unwrapped), with the original's K upvalues as
// its first ones (cjson's functions read their settings there) and the original's C
// function after them.
template <int K>
int call_original(lua_State* L) {
  lua_CFunction fn;
  std::memcpy(&fn, lua_touserdata(L, lua_upvalueindex(K + 1)), sizeof fn);
  return fn(L);
}

// f(s, ...) for a string s that f reads through in one C call without allocating as it
// goes (cjson.decode, cmsgpack.unpack, redis.sha1hex), unless s is too long to read in what
// is left of the budget.
template <int K>
int paced(lua_State* L) {
  if (Run* r = t_run; r && lua_type(L, 1) == LUA_TSTRING) {
    const int64_t left_ns = r->deadline_ns - run_clock_ns();
    if (r->over_budget || static_cast<int64_t>(lua_objlen(L, 1)) > left_ns * kBytesPerNsAtMost) {
      r->over_budget = true;
      return luaL_error(L, "script ran past its budget");
    }
  }
  return call_original<K>(L);
}

// The comparator table.sort calls: the script's (upvalue 1), or `<`.
int timed_less(lua_State* L) {
  check_budget(L);
  if (lua_isnil(L, lua_upvalueindex(1))) {
    lua_pushboolean(L, lua_lessthan(L, 1, 2));
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

// Sorts the table at 1 (n elements) when every element is a number (no NaN, no -0) or every
// one a string, and no comparator was given: such elements have one order only (equal ones
// cannot be told apart), so any sort gives Lua's answer — here std::sort's, n log n whatever
// order they came in. False (nothing done) for any other table.
bool sort_plain(lua_State* L, size_t n) {
  lua_rawgeti(L, 1, 1);
  const int type = lua_type(L, -1);
  lua_pop(L, 1);
  if (type != LUA_TNUMBER && type != LUA_TSTRING) return false;
  if (Run* r =
          t_run) {  // (one comparison a nanosecond at best: what cannot end in time is refused)
    const auto comparisons = static_cast<int64_t>(n) * (64 - __builtin_clzll(n));
    if (comparisons > r->deadline_ns - run_clock_ns()) {
      r->over_budget = true;
      luaL_error(L, "script ran past its budget");
    }
  }
  // (no Lua call below can raise an error: reads and writes of existing slots, no metamethods)
  try {
    if (type == LUA_TNUMBER) {
      std::vector<lua_Number> v;
      v.reserve(n);
      for (size_t i = 1; i <= n; ++i) {
        lua_rawgeti(L, 1, static_cast<int>(i));
        const lua_Number d = lua_tonumber(L, -1);
        const bool plain = lua_type(L, -1) == LUA_TNUMBER && d == d && !(d == 0 && std::signbit(d));
        lua_pop(L, 1);
        if (!plain) return false;
        v.push_back(d);
      }
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i <= n; ++i) {
        lua_pushnumber(L, v[i - 1]);
        lua_rawseti(L, 1, static_cast<int>(i));
      }
      return true;
    }
    std::vector<std::string_view> v;  // (the table keeps every string alive meanwhile)
    v.reserve(n);
    for (size_t i = 1; i <= n; ++i) {
      lua_rawgeti(L, 1, static_cast<int>(i));
      size_t len = 0;
      const char* p = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
      lua_pop(L, 1);
      if (!p) return false;
      v.emplace_back(p, len);
    }
    std::sort(v.begin(), v.end());  // (bytes compared unsigned, as strcoll in the C locale)
    for (size_t i = 1; i <= n; ++i) {
      lua_pushlstring(L, v[i - 1].data(), v[i - 1].size());  // (interned: found, not made)
      lua_rawseti(L, 1, static_cast<int>(i));
    }
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

// table.sort(t [, comp]): Lua's, bounded. A comparator written in Lua runs under the
// budget's hook, and a small table (kSmallSort) costs little however it is ordered: Lua's
// sort as it is. Numbers alone or strings alone: sort_plain. Anything else (a C function as
// the comparator, mixed or odd elements): Lua's sort with the comparisons above.
template <int K>
int timed_sort(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const bool comparator = !lua_isnoneornil(L, 2);
  if (comparator) luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  const size_t n = lua_objlen(L, 1);
  if (n <= kSmallSort || (comparator && !lua_iscfunction(L, 2))) return call_original<K>(L);
  if (!comparator && sort_plain(L, n)) return 0;
  lua_pushcclosure(L, timed_less, 1);  // (the script's comparator, or nil, as its upvalue)
  return call_original<K>(L);
}

// string.rep(s, n): Lua's, once the result is known to fit.
template <int K>
int sized_rep(lua_State* L) {
  size_t len = 0;
  luaL_checklstring(L, 1, &len);
  const int n = luaL_checkint(L, 2);
  if (len == 0 || n <= 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  // (Lua's buffer holds the pieces and the whole: about twice the result)
  if (len > heap_room() / 2 / static_cast<size_t>(n)) return out_of_memory(L);
  return call_original<K>(L);
}

// The bytes cjson.encode would write for the value at `idx`, at least (its strings and
// numbers and the punctuation); stops counting past `cap`. Depth past cjson's own limit
// is left for cjson to refuse.
struct Estimate {
  size_t bytes = 0;
  size_t cap = 0;
  bool over() const { return bytes > cap; }
};

void estimate_json(lua_State* L, int idx, int depth, Estimate& e) {
  check_budget(L);
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      e.bytes += n + 2;
      if (e.over()) return;  // (past the room already: no need to look closer)
      // Escapes: a control byte takes six, a quote, backslash or slash two. (So at most
      // the heap's room is ever scanned, and the clock is read before a long scan.)
      if (n > (1 << 16) && t_run && run_clock_ns() >= t_run->deadline_ns) {
        t_run->over_budget = true;
        luaL_error(L, "script ran past its budget");
      }
      for (size_t i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        e.bytes += c < 0x20 ? 5 : (c == '"' || c == '\\' || c == '/') ? 1 : 0;
      }
      return;
    }
    case LUA_TTABLE:
      break;
    default:
      e.bytes += 1;
      return;
  }
  if (depth > 1000 || !lua_checkstack(L, 3)) return;
  e.bytes += 2;
  lua_pushnil(L);
  while (!e.over() && lua_next(L, idx)) {
    const int top = lua_gettop(L);
    estimate_json(L, top - 1, depth + 1, e);  // (a key is written too)
    estimate_json(L, top, depth + 1, e);
    e.bytes += 2;
    lua_pop(L, 1);
  }
  if (e.over()) lua_pop(L, 1);  // (the key lua_next left)
}

// cjson.encode(v): cjson's, once the text is known to fit the heap's room.
template <int K>
int sized_encode(lua_State* L) {
  if (lua_gettop(L) >= 1) {
    Estimate e;
    e.cap = heap_room();
    estimate_json(L, 1, 0, e);
    if (e.over()) return out_of_memory(L);
  }
  return call_original<K>(L);
}

// xpcall(f, handler), as Lua 5.1's: true and f's results, or false and what the handler
// made of the error (a handler that fails is given its own error, as Lua does, until it
// answers or nests too deep: "error in error handling"). The handler runs after f has
// unwound rather than before (no script can see the difference: Redis has no debug
// library), under the budget's hook; once the budget is spent, the error goes on up.
int watched_xpcall(lua_State* L) {
  luaL_checkany(L, 2);
  lua_settop(L, 2);
  lua_pushvalue(L, 1);
  const int rc = lua_pcall(L, 0, LUA_MULTRET, 0);
  if (rc == 0) {
    lua_pushboolean(L, 1);
    lua_replace(L, 1);
    lua_remove(L, 2);
    return lua_gettop(L);
  }
  if (t_run && t_run->over_budget) return lua_error(L);
  if (rc != LUA_ERRRUN) {  // (memory: Lua calls no handler for it)
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
  }
  for (int nesting = 0;; ++nesting) {  // (stack: f, handler, error)
    if (nesting == kMaxHandlerNesting) {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
      lua_pushliteral(L, "error in error handling");
      return 2;
    }
    lua_pushvalue(L, 2);
    lua_insert(L, -2);
    const int hrc = lua_pcall(L, 1, 1, 0);
    if (t_run && t_run->over_budget) return lua_error(L);
    if (hrc == 0) break;
    if (hrc != LUA_ERRRUN) return lua_error(L);
  }
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

// Replaces `lib`.`name` (a library table that is not sealed yet) with f<K>, for an original
// that has K upvalues (checked: a library of another build would stop the node at start,
// not run unbounded).
template <int K, lua_CFunction F>
void wrap(lua_State* L, const char* lib, const char* name) {
  lua_getglobal(L, lib);
  lua_getfield(L, -1, name);
  const int original = lua_gettop(L);
  const lua_CFunction fn = lua_tocfunction(L, original);
  int n = 0;
  while (lua_getupvalue(L, original, n + 1) != nullptr) ++n;  // (pushed: the new one's first)
  if (!fn || n != K) {
    spdlog::critical("script engine: {}.{} is not the C function with {} upvalues it expects", lib,
                     name, K);
    std::abort();
  }
  std::memcpy(lua_newuserdata(L, sizeof fn), &fn, sizeof fn);
  lua_pushcclosure(L, F, K + 1);
  lua_setfield(L, original - 1, name);
  lua_settop(L, original - 2);
}

}  // namespace

void bound_long_calls(lua_State* L) {
  wrap<0, timed_sort<0>>(L, "table", "sort");
  wrap<0, sized_rep<0>>(L, "string", "rep");
  wrap<1, sized_encode<1>>(L, "cjson", "encode");  // (cjson's settings: its one upvalue)
  wrap<1, paced<1>>(L, "cjson", "decode");
  wrap<0, paced<0>>(L, "cmsgpack", "unpack");
  wrap<0, paced<0>>(L, "cmsgpack", "unpack_one");
  wrap<0, paced<0>>(L, "cmsgpack", "unpack_limit");
  wrap<0, paced<0>>(L, "redis", "sha1hex");
  lua_register(L, "xpcall", watched_xpcall);
}

}  // namespace script
}  // namespace fg
