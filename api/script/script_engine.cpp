// The Lua engine: states per shard, the redis.* API, conversions, budgets and undo.
//
// Lua is C: its errors are longjmps. The functions Lua calls (redis.call and the rest) keep
// no C++ object with a destructor alive in their own frame where Lua may raise an error:
// what they build lives in the run (Run) or in a callee that has returned.
#include "script_engine.hpp"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
int luaopen_cjson(lua_State* L);
int luaopen_bit(lua_State* L);
}

#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "data_cmd.hpp"
#include "errors.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "lua_libs.hpp"
#include "sandbox.hpp"
#include "shard.hpp"
#include "words.hpp"

namespace fg {

namespace {
void sha1_hex_into(std::string_view data, char* out) {
  unsigned char md[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
}
}  // namespace

std::string sha1_hex(std::string_view data) {
  std::string out(2 * SHA_DIGEST_LENGTH, '0');
  sha1_hex_into(data, out.data());
  return out;
}

namespace {
// A script's run: what redis.call needs, and what undoes its writes if it is aborted.
struct Run {
  ScriptEngine::State* state = nullptr;
  const Step* step = nullptr;
  int64_t now_ns = 0;
  size_t shards = 1;
  bool cluster = false;
  bool read_only = false;
  int slot = -1;  // cluster: the slot the script's keys are in, once known
  int64_t deadline_ns = 0;
  bool over_budget = false;
  int resp = 2;  // the replies redis.call gives the script (redis.setresp)
  ScriptEngine::Callable callable = nullptr;
  const ScriptCaller* caller = nullptr;  // whose rights redis.call runs with (null: anyone's)
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
    resp = 2;
    saved.clear();
  }
};
}  // namespace

// A Lua state's heap. Lua says a block's size whenever it frees or resizes one, so small
// blocks need no header: they come from size classes carved out of big chunks and go back
// to their class's free list (most of what a script allocates is small and short-lived:
// strings, tables, reply values). Big blocks are malloc's. The chunks go with the state.
class LuaHeap {
 public:
  LuaHeap() = default;
  LuaHeap(const LuaHeap&) = delete;
  LuaHeap& operator=(const LuaHeap&) = delete;
  ~LuaHeap() {
    for (void* c : chunks_) std::free(c);
  }

  void* alloc(size_t n) {
    if (n > kMaxSmall) return std::malloc(n);
    const size_t c = (n - 1) / kGrain;
    if (Free* f = free_[c]) {
      free_[c] = f->next;
      return f;
    }
    const size_t size = (c + 1) * kGrain;
    if (left_ < size && !refill()) return nullptr;
    void* p = next_;
    next_ += size;
    left_ -= size;
    return p;
  }
  void release(void* p, size_t n) {
    if (n > kMaxSmall) return std::free(p);
    auto* f = static_cast<Free*>(p);
    const size_t c = (n - 1) / kGrain;
    f->next = free_[c];
    free_[c] = f;
  }
  void* resize(void* p, size_t from, size_t to) {
    if (from > kMaxSmall && to > kMaxSmall) return std::realloc(p, to);
    if (from <= kMaxSmall && to <= kMaxSmall && (from - 1) / kGrain == (to - 1) / kGrain) return p;
    void* q = alloc(to);
    if (!q) return to < from ? p : nullptr;  // (Lua assumes a shrink never fails)
    std::memcpy(q, p, std::min(from, to));
    release(p, from);
    return q;
  }

 private:
  static constexpr size_t kGrain = 16;
  static constexpr size_t kMaxSmall = 512;
  static constexpr size_t kChunk = 64 * 1024;
  struct Free {
    Free* next;
  };
  bool refill() {
    // (what is left of the old chunk is too small for this class: it goes to smaller ones)
    while (left_ >= kGrain) {
      const size_t size = std::min(left_, kMaxSmall) / kGrain * kGrain;
      release(next_, size);
      next_ += size;
      left_ -= size;
    }
    void* c = std::malloc(kChunk);
    if (!c) return false;
    chunks_.push_back(c);
    next_ = static_cast<char*>(c);
    left_ = kChunk;
    return true;
  }
  Free* free_[kMaxSmall / kGrain] = {};
  char* next_ = nullptr;
  size_t left_ = 0;
  std::vector<void*> chunks_;
};

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
  uint64_t random = kRandomStart;  // math.random's generator (48 bits, as redis-server's)
  SandboxMarks marks;              // what the current run changed that outlives it
  Run run;                         // the current run's scratch, reused
  static constexpr uint64_t kRandomStart = 0x1234ABCD330E;
  ~State() {
    if (L) lua_close(L);
  }
};

namespace {

constexpr int kHookEvery = 1000;            // instructions between budget checks
constexpr size_t kAfterRunSlack = 1 << 20;  // heap past the cap for a run's aftermath
constexpr int kMaxReplyDepth = 200;

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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
  if (nsize > osize && st->used + (nsize - osize) > st->limit) {
    st->out_of_memory = true;
    return nullptr;
  }
  void* p = ptr ? st->heap.resize(ptr, osize, nsize) : st->heap.alloc(nsize);
  if (!p) return nullptr;
  st->used = st->used - osize + nsize;
  return p;
}

// Redis's error table: {err = "CODE message"} ("ERR" when the text has no code of its own).
void push_error_table(lua_State* L, std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.remove_suffix(1);
  lua_newtable(L);
  lua_pushstring(L, "err");
  if (!text.empty() && text[0] == '-') {
    text.remove_prefix(1);
    if (text.find(' ') == std::string_view::npos) {
      lua_pushstring(L, "ERR ");
      lua_pushlstring(L, text.data(), text.size());
      lua_concat(L, 2);
    } else {
      lua_pushlstring(L, text.data(), text.size());
    }
  } else {
    lua_pushstring(L, "ERR ");
    lua_pushlstring(L, text.data(), text.size());
    lua_concat(L, 2);
  }
  lua_settable(L, -3);
}

// A reply as Lua sees it. RESP2 (the default): integers as numbers, bulk strings as
// strings, nil as false, status as {ok=...}, errors as {err=...}, arrays (and maps, flat) as
// tables. RESP3 (redis.setresp(3)): nil as nil, maps as {map={k=v}}, sets as {set={m=true}},
// doubles as {double=n}, booleans as booleans, big numbers as {big_number="..."}.
size_t push_reply(lua_State* L, const DataReply& r, size_t i, bool resp3) {
  using T = ReplyItem::Type;
  if (i >= r.items.size()) {
    lua_pushboolean(L, 0);
    return i;
  }
  const ReplyItem& it = r.items[i];
  auto wrap = [L](const char* field) {  // {field = <what push_reply pushes next>}
    lua_createtable(L, 0, 1);
    lua_pushstring(L, field);
  };
  switch (it.type) {
    case T::kInt:
      lua_pushnumber(L, static_cast<lua_Number>(it.n));
      return i + 1;
    case T::kBulk:
      lua_pushlstring(L, it.s.data(), it.s.size());
      return i + 1;
    case T::kDouble:
    case T::kBigNumber:
    case T::kVerbatim:
      if (!resp3) {
        const size_t skip = it.type == T::kVerbatim ? std::min<size_t>(4, it.s.size()) : 0;
        lua_pushlstring(L, it.s.data() + skip, it.s.size() - skip);
      } else if (it.type == T::kDouble) {
        wrap("double");
        lua_pushnumber(L, std::strtod(it.s.c_str(), nullptr));
        lua_settable(L, -3);
      } else if (it.type == T::kBigNumber) {
        wrap("big_number");
        lua_pushlstring(L, it.s.data(), it.s.size());
        lua_settable(L, -3);
      } else {
        wrap("verbatim_string");
        lua_createtable(L, 0, 2);
        lua_pushlstring(L, it.s.data(), std::min<size_t>(3, it.s.size()));
        lua_setfield(L, -2, "format");
        const size_t skip = std::min<size_t>(4, it.s.size());
        lua_pushlstring(L, it.s.data() + skip, it.s.size() - skip);
        lua_setfield(L, -2, "string");
        lua_settable(L, -3);
      }
      return i + 1;
    case T::kNull:
    case T::kNullArray:
      if (resp3) {
        lua_pushnil(L);
      } else {
        lua_pushboolean(L, 0);
      }
      return i + 1;
    case T::kBool:
      if (resp3) {
        lua_pushboolean(L, it.n != 0);
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(it.n));
      }
      return i + 1;
    case T::kStatus:
      lua_createtable(L, 0, 1);
      lua_pushstring(L, "ok");
      lua_pushlstring(L, it.s.data(), it.s.size());
      lua_settable(L, -3);
      return i + 1;
    case T::kError:
      lua_createtable(L, 0, 1);
      lua_pushstring(L, "err");
      lua_pushlstring(L, it.s.data(), it.s.size());
      lua_settable(L, -3);
      return i + 1;
    case T::kArray:
    case T::kMap:
    case T::kSet: {
      lua_checkstack(L, 6);
      size_t j = i + 1;
      if (resp3 && it.type != T::kArray) {
        const bool map = it.type == T::kMap;
        wrap(map ? "map" : "set");
        lua_createtable(L, 0, static_cast<int>(std::min<int64_t>(it.n, 1 << 20)));
        for (int64_t k = 0; k < it.n; ++k) {
          j = push_reply(L, r, j, true);
          if (map) {
            j = push_reply(L, r, j, true);
          } else {
            lua_pushboolean(L, 1);
          }
          lua_settable(L, -3);
        }
        lua_settable(L, -3);
        return j;
      }
      const int64_t n = ReplyItem::children(it.type, it.n);
      lua_createtable(L, static_cast<int>(std::min<int64_t>(n, 1 << 20)), 0);
      for (int64_t k = 1; k <= n; ++k) {
        j = push_reply(L, r, j, resp3);
        lua_rawseti(L, -2, static_cast<int>(k));
      }
      return j;
    }
  }
  return i + 1;
}

// The string field `name` of the table at `idx` (negative: below the top), or null; the
// string is left pushed.
const char* string_field(lua_State* L, const char* name, size_t* len, int idx = -1) {
  lua_pushstring(L, name);
  lua_rawget(L, idx - 1);
  if (lua_type(L, -1) == LUA_TSTRING) return lua_tolstring(L, -1, len);  // (left pushed)
  lua_pop(L, 1);
  return nullptr;
}

// The value at the top of the stack as a reply (Redis's rules): strings bulk, numbers
// truncated to integers, true 1 and false nil (RESP3 scripts: booleans), {err=} an error,
// {ok=} a status, {double=} a double, {big_number=} and {verbatim_string={format=,
// string=}} their RESP3 types, {map=} a map, {set=} a set, other tables arrays up to their
// first nil. (A RESP2 client gets RESP3 types as their RESP2 equivalents.)
void to_reply(lua_State* L, DataReply& out, int depth, bool resp3) {
  if (depth > kMaxReplyDepth || !lua_checkstack(L, 6)) {
    out.error(err::kLuaStackLimit);
    return;
  }
  auto no_newlines = [](const char* p, size_t n) {
    std::string t(p, n);
    for (char& c : t)
      if (c == '\r' || c == '\n') c = ' ';
    return t;
  };
  switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, -1, &n);
      out.bulk(std::string_view(s, n));
      return;
    }
    case LUA_TBOOLEAN:
      if (resp3) {
        out.boolean(lua_toboolean(L, -1) != 0);
      } else if (lua_toboolean(L, -1)) {
        out.integer(1);
      } else {
        out.null();
      }
      return;
    case LUA_TNUMBER:
      out.integer(static_cast<int64_t>(lua_tonumber(L, -1)));
      return;
    case LUA_TTABLE: {
      size_t n;
      if (const char* s = string_field(L, "err", &n)) {
        std::string_view text(s, n);
        if (!text.empty() && text[0] == '-') text.remove_prefix(1);
        out.error(text);
        lua_pop(L, 1);
        return;
      }
      if (const char* s = string_field(L, "ok", &n)) {
        out.status(no_newlines(s, std::strlen(s)));
        lua_pop(L, 1);
        return;
      }
      lua_pushstring(L, "double");
      lua_rawget(L, -2);
      if (lua_type(L, -1) == LUA_TNUMBER) {
        out.dbl(lua_tonumber(L, -1));
        lua_pop(L, 1);
        return;
      }
      lua_pop(L, 1);
      if (const char* s = string_field(L, "big_number", &n)) {
        out.items.push_back({ReplyItem::Type::kBigNumber, 0, no_newlines(s, n)});
        lua_pop(L, 1);
        return;
      }
      lua_pushstring(L, "verbatim_string");
      lua_rawget(L, -2);
      if (lua_type(L, -1) == LUA_TTABLE) {
        size_t fn;
        if (const char* format = string_field(L, "format", &fn)) {
          size_t tn;
          if (const char* text = string_field(L, "string", &tn, -2)) {
            std::string v(format, std::min<size_t>(fn, 3));
            v.resize(3, ' ');
            v += ':';
            v.append(text, tn);
            out.items.push_back({ReplyItem::Type::kVerbatim, 0, std::move(v)});
            lua_pop(L, 3);
            return;
          }
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
      for (const bool map : {true, false}) {
        lua_pushstring(L, map ? "map" : "set");
        lua_rawget(L, -2);
        if (lua_type(L, -1) != LUA_TTABLE) {
          lua_pop(L, 1);
          continue;
        }
        const size_t header = out.items.size();
        if (map) {
          out.map(0);
        } else {
          out.set(0);
        }
        int64_t count = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {  // (stack: table, key, value)
          if (map) {
            lua_pushvalue(L, -2);  // (a copy: converting the key itself would upset lua_next)
            to_reply(L, out, depth + 1, resp3);
            lua_pop(L, 1);
            to_reply(L, out, depth + 1, resp3);
          } else {  // a set's members are its keys
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            to_reply(L, out, depth + 1, resp3);
          }
          lua_pop(L, 1);
          ++count;
        }
        out.items[header].n = count;
        lua_pop(L, 1);
        return;
      }
      const size_t header = out.items.size();
      out.array(0);
      int64_t count = 0;
      for (int j = 1;; ++j) {
        lua_rawgeti(L, -1, j);
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          break;
        }
        to_reply(L, out, depth + 1, resp3);
        lua_pop(L, 1);
        ++count;
      }
      out.items[header].n = count;
      return;
    }
    default:
      out.null();
      return;
  }
}

// --- the commands a script runs -------------------------------------------------------

void status_error(OpStatus st, DataReply& out) {
  out.clear();
  out.error(st == OpStatus::kWrongType ? err::kWrongType : err::kKeyLimit);
}

// Runs one data op on `shard` for the script.
void run_part(Run& r, Shard& shard, DataCmd c, std::string_view key, uint32_t slot,
              const std::vector<std::string_view>& words, DataReply& reply, bool every_slot) {
  ShardOp o;
  o.code = OpCode::kData;
  o.data = c;
  o.key = key;
  o.hash = key.empty() ? 0 : KeyTable::hash(key);
  o.slot = static_cast<uint16_t>(slot);
  o.args = &words;
  o.reply = &reply;
  o.every_slot = every_slot;
  shard.script_call(o, r.now_ns);
  if (o.status != OpStatus::kOk) status_error(o.status, reply);
}

// What redis.call runs: r.words in, r.reply out. Only C++ here, no Lua.
void call_command(Run& r) {
  DataReply& out = r.reply;
  out.clear();
  const std::string name = to_lower(r.words[0]);
  const auto argc = static_cast<int>(r.words.size());
  if (name == "time" || name == "ping") {  // what limiter scripts ask of the server
    const int ar = name == "time" ? 1 : -1;
    if ((ar > 0 && argc != ar) || argc > 2) {
      return out.error(err::kScriptArity);
    }
    if (name == "ping") return argc == 2 ? out.bulk(r.words[1]) : out.status("PONG");
    out.array(2);
    out.bulk(std::to_string(r.now_ns / 1'000'000'000));
    out.bulk(std::to_string(r.now_ns % 1'000'000'000 / 1000));
    return;
  }
  const ScriptCallable callable = r.callable ? r.callable(name) : ScriptCallable{};
  const int ar = callable.arity;
  if (ar == 0) return out.error(err::kScriptUnknownCommand);
  if ((ar > 0 && argc != ar) || argc < -ar) {
    return out.error(err::kScriptArity);
  }
  if (r.caller) {
    if (const char* why = r.caller->refuse(r.words)) return out.error(std::string("ERR ") + why);
  }
  if (callable.data == DataCmd::kNone) return out.error(err::kScriptNotAllowed);
  const DataCmd c = callable.data;
  const DataCmdInfo& info = data_cmd_info(c);
  if (r.read_only && info.writes) {
    return out.error(err::kScriptReadOnly);
  }
  const Step& step = *r.step;
  if (info.every_shard) {  // KEYS: every shard the script holds
    size_t found = 0;
    std::vector<ReplyItem> keys;
    for (uint64_t m = step.mask; m; m &= m - 1) {
      r.part_reply.clear();
      run_part(r, *step.shards[__builtin_ctzll(m)], c, {}, 0, r.words, r.part_reply, true);
      if (r.part_reply.is_error()) {
        out = r.part_reply;
        return;
      }
      for (size_t i = 1; i < r.part_reply.items.size(); ++i) {
        keys.push_back(std::move(r.part_reply.items[i]));
        ++found;
      }
    }
    out.array(static_cast<int64_t>(found));
    for (auto& k : keys) out.items.push_back(std::move(k));
    return;
  }
  if (info.pairs_broken(r.words.size())) {
    return out.error(err::wrong_arity(info.name));
  }
  // Its keys: where they are, whether the script may touch them, what to undo.
  const size_t last = info.merge == Merge::kNone ? 2 : r.words.size();
  r.slots.assign(r.words.size(), 0);
  for (size_t j = 1; j < last; j += info.step) {
    const std::string_view key = r.words[j];
    if (key.size() > kMaxKeyLen) return out.error(err::kKeyTooLong);
    const uint32_t slot = key_slot(key);
    r.slots[j] = slot;
    const size_t shard = r.shards == 1 ? 0 : slot % r.shards;
    if (!(step.mask >> shard & 1) || !step.shards[shard]->owns(slot)) {
      return out.error(err::kScriptNonLocalKey);
    }
    if (r.cluster) {
      if (r.slot < 0) {
        r.slot = static_cast<int>(slot);
      } else if (static_cast<uint32_t>(r.slot) != slot) {
        return out.error(err::kScriptCrossSlot);
      }
    }
  }
  for (size_t j = 1; j < last && info.writes; j += info.step) {
    const std::string_view key = r.words[j];
    if (std::any_of(r.saved.begin(), r.saved.end(),
                    [&](const Run::Saved& sv) { return sv.key == key; }))
      continue;
    Shard* s = step.shards[r.shards == 1 ? 0 : r.slots[j] % r.shards];
    Run::Saved& saved = r.saved.emplace_back();
    saved.shard = s;
    saved.key.assign(key);
    saved.had = s->save_key(key, r.now_ns, saved.before);
  }
  auto shard_of = [&](size_t j) -> Shard& {
    return *step.shards[r.shards == 1 ? 0 : r.slots[j] % r.shards];
  };
  if (info.merge == Merge::kNone) {
    return run_part(r, shard_of(1), c, r.words[1], r.slots[1], r.words, out, false);
  }
  // Several keys: one part per key, the parts' replies added up, lined up or agreed on (the
  // request core's rule for the same commands).
  int64_t sum = 0;
  std::vector<ReplyItem> items;
  for (size_t j = 1; j < r.words.size(); j += info.step) {
    r.part.assign({r.words[0], r.words[j]});
    if (info.step == 2) r.part.push_back(r.words[j + 1]);
    r.part_reply.clear();
    run_part(r, shard_of(j), c, r.words[j], r.slots[j], r.part, r.part_reply, false);
    if (r.part_reply.is_error()) {
      out = r.part_reply;
      return;
    }
    if (!r.part_reply.items.empty()) sum += r.part_reply.items[0].n;
    for (size_t i = 1; i < r.part_reply.items.size(); ++i)
      items.push_back(std::move(r.part_reply.items[i]));
  }
  switch (info.merge) {
    case Merge::kSum:
      return out.integer(sum);
    case Merge::kConcat:
      out.array(static_cast<int64_t>(items.size()));
      for (auto& i : items) out.items.push_back(std::move(i));
      return;
    default:
      return out.ok();
  }
}

// --- the redis.* API ------------------------------------------------------------------

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
    push_error_table(L, "redis.call/pcall can only be called inside a script invocation");
    return lua_error(L);
  }
  if (r->over_budget) return luaL_error(L, "script ran past its budget");
  const int argc = lua_gettop(L);
  if (argc == 0) {
    push_error_table(L, "Please specify at least one argument for this redis lib call");
    return raise ? lua_error(L) : 1;
  }
  if (!gather_args(L, *r, argc)) {
    lua_pop(L, argc);
    push_error_table(L, "Lua redis lib command arguments must be strings or integers");
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
    push_error_table(L, "wrong number of arguments");
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
    push_error_table(L, "wrong number or type of arguments");
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
    push_error_table(L, "wrong number or type of arguments");
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
    push_error_table(L, "redis.log() requires two arguments or more.");
    return lua_error(L);
  }
  if (!lua_isnumber(L, 1)) {
    push_error_table(L, "First argument must be a number (log level).");
    return lua_error(L);
  }
  const int level = static_cast<int>(lua_tonumber(L, 1));
  if (level < 0 || level > 3) {
    push_error_table(L, "Invalid debug level.");
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
    push_error_table(L, "redis.setresp can only be called inside a script invocation");
    return lua_error(L);
  }
  if (lua_gettop(L) != 1) {
    push_error_table(L, "redis.setresp() requires one argument.");
    return lua_error(L);
  }
  const int resp = static_cast<int>(lua_tonumber(L, 1));
  if (resp != 2 && resp != 3) {
    push_error_table(L, "RESP version must be 2 or 3.");
    return lua_error(L);
  }
  t_run->resp = resp;
  return 0;
}

// math.random and math.randomseed: Lua's own, on a 48-bit generator of redis-server's kind
// (one per Lua state, not reseeded between runs) rather than the C library's rand().
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
    push_error_table(L, "redis.set_repl() requires two arguments.");
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
    push_error_table(L, "redis.acl_check_cmd can only be called inside a script invocation");
    return lua_error(L);
  }
  const int argc = lua_gettop(L);
  if (argc == 0) {
    push_error_table(L, "Please specify at least one argument for this redis lib call");
    return lua_error(L);
  }
  if (!gather_args(L, *r, argc)) {
    push_error_table(L, "Lua redis lib command arguments must be strings or integers");
    return lua_error(L);
  }
  if (!r->callable || r->callable(r->words[0]).arity == 0) {
    lua_pop(L, argc);
    push_error_table(L, "Invalid command passed to redis.acl_check_cmd()");
    return lua_error(L);
  }
  const bool allowed = !r->caller || !r->caller->refuse(r->words);
  lua_pop(L, argc);
  lua_pushboolean(L, allowed ? 1 : 0);
  return 1;
}

// The pcall message handler: where the error happened, as Redis reports it.
int error_handler(lua_State* L) {
  lua_Debug ar;
  bool where = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
  if (where && std::strcmp(ar.what, "C") == 0) {
    where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
  }
  if (!lua_istable(L, 1)) {
    lua_newtable(L);
    lua_pushstring(L, "err");
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
    lua_settable(L, -3);
    lua_replace(L, 1);
  }
  if (where) {
    lua_pushstring(L, "source");
    lua_pushstring(L, ar.source);
    lua_settable(L, 1);
    lua_pushstring(L, "line");
    lua_pushnumber(L, ar.currentline);
    lua_settable(L, 1);
  }
  lua_settop(L, 1);
  return 1;
}

void hook(lua_State* L, lua_Debug*) {
  Run* r = t_run;
  if (!r) return;
  if (!r->over_budget && mono_ns() < r->deadline_ns) return;
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
  open_lib(L, "bit", luaopen_bit);
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

// What a run does in the Lua heap before its call, in protected calls (lua_cpcall): memory
// running out there is an error the client is answered, not a Lua panic, which would end
// the process. (Every step outside lua_pcall that may allocate belongs here.)
struct Setup {
  const char* fname = nullptr;          // the script's function in the registry ("f_<sha>")
  std::string_view body;                // its source, compiled when this state has no function yet
  bool compiled = false;                // compiled now (not found in the registry)
  const char* compile_error = nullptr;  // why it did not compile (a string in the Lua stack)
  bool keep = false;  // keep the function in the registry (the cache keeps the script)
  const std::vector<std::string_view>* words = nullptr;
  size_t keys_end = 0;
  bool ready = false;  // KEYS and ARGV are set: nothing is left for setup_call
};

void set_arguments(lua_State* L, Setup& s) {
  set_array(L, "KEYS", *s.words, 3, s.keys_end);
  set_array(L, "ARGV", *s.words, s.keys_end, s.words->size());
  s.ready = true;
}

// Finds or compiles the function; leaves it in the registry as "fg_run" (or, when the body
// does not compile, the reason on the stack and in compile_error). A function found (the
// usual EVALSHA) gets its KEYS and ARGV here too: one protected call per run.
int setup_function(lua_State* L) {
  auto* s = static_cast<Setup*>(lua_touserdata(L, 1));
  lua_getfield(L, LUA_REGISTRYINDEX, s->fname);
  if (!lua_isnil(L, -1)) {
    lua_setfield(L, LUA_REGISTRYINDEX, "fg_run");
    set_arguments(L, *s);
    return 0;
  }
  lua_pop(L, 1);
  if (load_sealed(L, s->body.data(), s->body.size(), "@user_script")) {
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "fg_compile_error");  // (outlives this call)
    s->compile_error = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
    return 0;
  }
  s->compiled = true;
  lua_setfield(L, LUA_REGISTRYINDEX, "fg_run");
  return 0;
}

// Keeps the function under its name when the cache keeps the script (a state holds the
// functions of cached scripts only, so its registry stays as bounded as the cache), and
// sets KEYS and ARGV.
int setup_call(lua_State* L) {
  auto* s = static_cast<Setup*>(lua_touserdata(L, 1));
  if (s->keep) {
    lua_getfield(L, LUA_REGISTRYINDEX, "fg_run");
    lua_setfield(L, LUA_REGISTRYINDEX, s->fname);
  }
  set_arguments(L, *s);
  return 0;
}

// The error a failed run answers, from the handler's table (Redis's format: the message,
// then which script and where).
void error_reply(lua_State* L, const std::string& sha, DataReply& out) {
  std::string msg = err::kScriptFailure;
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "err");
    if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!msg.empty() && msg[0] == '-') msg.erase(0, 1);
    lua_getfield(L, -1, "source");
    lua_getfield(L, -2, "line");
    if (lua_isstring(L, -2) && lua_isnumber(L, -1)) {
      msg += " script: " + sha + ", on " + lua_tostring(L, -2) + ":" +
             std::to_string(static_cast<int64_t>(lua_tonumber(L, -1))) + ".";
    }
    lua_pop(L, 2);
  } else if (lua_isstring(L, -1)) {
    msg = err::script_run_error(sha, lua_tostring(L, -1));
  }
  out.clear();
  out.error(msg);
}

}  // namespace

ScriptEngine::ScriptEngine(size_t shards, bool cluster, ScriptLimits limits, Callable callable,
                           ScriptCache& cache)
    : shards_(shards),
      cluster_(cluster),
      limits_(limits),
      callable_(callable),
      cache_(cache),
      started_ns_(new std::atomic<int64_t>[shards]),
      heap_bytes_(new std::atomic<int64_t>[shards]) {
  states_.resize(shards);
  for (size_t i = 0; i < shards; ++i) started_ns_[i].store(0, std::memory_order_relaxed);
  for (size_t i = 0; i < shards; ++i) heap_bytes_[i].store(0, std::memory_order_relaxed);
}

int64_t ScriptEngine::longest_run_ns() const {
  const int64_t now = mono_ns();
  int64_t longest = 0;
  for (size_t i = 0; i < shards_; ++i) {
    const int64_t t = started_ns_[i].load(std::memory_order_relaxed);
    if (t != 0) longest = std::max(longest, now - t);
  }
  return longest;
}

int64_t ScriptEngine::heap_bytes() const {
  int64_t sum = 0;
  for (size_t i = 0; i < shards_; ++i) sum += heap_bytes_[i].load(std::memory_order_relaxed);
  return sum;
}

ScriptEngine::~ScriptEngine() = default;

bool ScriptEngine::exists(std::string_view sha) const {
  return cache_.snapshot()->has(to_lower(sha));
}

void ScriptEngine::flush() { cache_.flush(); }

size_t ScriptEngine::scripts() const { return cache_.snapshot()->size(); }

size_t ScriptEngine::cache_bytes() const { return cache_.snapshot()->bytes; }

Result<std::string> ScriptEngine::load(std::string_view body) {
  const std::string sha = sha1_hex(body);
  if (cache_.snapshot()->has(sha)) return sha;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loader_) loader_ = new_state(limits_.memory_bytes);
    if (!loader_) return Error{err::kScriptNoState};
    lua_State* L = loader_->L;
    if (load_sealed(L, body.data(), body.size(), "@user_script")) {
      std::string e = err::script_compile_error(lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
      lua_pop(L, 1);
      return Error{std::move(e)};
    }
    lua_pop(L, 1);
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  if (Status st = cache_.add(sha, body); !st.ok()) return Error{st.error()};
  return sha;
}

void ScriptEngine::run(ShardOp& op, const Step& step, int64_t now_ns) {
  counters_.runs.fetch_add(1, std::memory_order_relaxed);
  const auto& a = *op.args;
  DataReply& out = *op.reply;
  out.clear();
  const std::string name = to_lower(a[0]);
  const bool by_sha = name.rfind("evalsha", 0) == 0;
  const bool read_only = name.size() > 3 && name.compare(name.size() - 3, 3, "_ro") == 0;
  int64_t numkeys = 0;
  if (a.size() < 3 || !parse_int(a[2], numkeys)) return out.error(err::kNotInteger);
  if (numkeys > static_cast<int64_t>(a.size()) - 3) {
    return out.error(err::kNumkeysTooMany);
  }
  if (numkeys < 0) return out.error(err::kNumkeysNegative);

  const size_t home = static_cast<size_t>(__builtin_ctzll(step.mask));
  std::unique_ptr<State>& slot = states_[home];
  if (slot) cache_.refresh(slot->catalog, slot->catalog_version);
  if (!slot || slot->generation != slot->catalog->generation) {  // (new, or SCRIPT FLUSH since)
    std::shared_ptr<const ScriptCache::Catalog> held;
    uint64_t held_version = 0;
    if (slot) {
      held = std::move(slot->catalog);
      held_version = slot->catalog_version;
    }
    cache_.refresh(held, held_version);
    slot = new_state(limits_.memory_bytes);
    if (!slot) return out.error(err::kScriptNoState);
    slot->catalog = std::move(held);
    slot->catalog_version = held_version;
    slot->generation = slot->catalog->generation;
  }
  State& st = *slot;
  const ScriptCache::Catalog& catalog = *st.catalog;
  lua_State* L = st.L;
  // The function's name in the registry: "f_" and the sha, lower case (no allocation).
  char fname[43] = "f_";
  if (by_sha) {
    if (a[1].size() == 40) {
      for (size_t i = 0; i < 40; ++i)
        fname[2 + i] = static_cast<char>(std::tolower(static_cast<unsigned char>(a[1][i])));
    }
  } else {
    sha1_hex_into(a[1], fname + 2);
  }
  fname[42] = '\0';
  const std::string_view sha(fname + 2, 40);

  // EVALSHA runs what the cache holds: a function this state compiled for an EVAL the
  // cache could not keep does not answer for it.
  const std::string* known = catalog.find(sha);
  if (by_sha && !known) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return out.error(err::kNoScript);
  }
  // The heap a run may grow: its cap, or only what clients may still make the node hold
  // (collected first, so garbage of earlier runs does not count against it).
  bool short_room = false;
  if (limits_.memory_room) {
    int64_t room = limits_.memory_room();
    if (room < static_cast<int64_t>(st.cap - st.used)) {
      lua_gc(L, LUA_GCCOLLECT, 0);
      room = std::max(room, ScriptLimits::kMinRunRoom);
      if (st.used + static_cast<size_t>(room) < st.cap) {
        st.limit = st.used + static_cast<size_t>(room);
        short_room = true;
      }
    }
  }
  // Its function and arguments, in protected calls.
  Setup setup;
  setup.fname = fname;
  setup.body = by_sha ? std::string_view(*known) : a[1];
  setup.words = &a;
  setup.keys_end = 3 + static_cast<size_t>(numkeys);
  st.out_of_memory = false;
  int rc = lua_cpcall(L, setup_function, &setup);
  if (rc == 0 && setup.compile_error) {
    const std::string e = err::script_compile_error(setup.compile_error);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "fg_compile_error");
    lua_settop(L, 0);
    st.limit = st.cap;
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return out.error(e);
  }
  if (rc == 0) {
    setup.keep = known != nullptr && setup.compiled;
    if (!by_sha && !known) {
      if (Status kept = cache_.add(std::string(sha), a[1]); !kept.ok()) {
        counters_.not_kept.fetch_add(1, std::memory_order_relaxed);
        static std::atomic<int64_t> warned_ns{0};
        const int64_t t = mono_ns();
        int64_t last = warned_ns.load(std::memory_order_relaxed);
        if (t - last > 10'000'000'000 && warned_ns.compare_exchange_strong(last, t)) {
          spdlog::warn("script {} runs but is not kept: {}", sha, kept.error());
        }
      } else {
        setup.keep = setup.compiled;
      }
    }
    if (!setup.ready) rc = lua_cpcall(L, setup_call, &setup);
  }
  if (rc != 0) {  // out of memory before the script ran: nothing of it happened
    lua_settop(L, 0);
    st.limit = st.cap;
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    out.error(err::script_out_of_memory(sha, short_room));
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (st.used + ScriptLimits::kMinRunRoom > st.cap) slot.reset();  // (full of live data)
    return;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "fg_error_handler");  // (names the registry holds:
  lua_getfield(L, LUA_REGISTRYINDEX, "fg_run");            // no allocation)

  Run& r = st.run;
  r.reset();
  r.state = &st;
  r.step = &step;
  r.now_ns = now_ns;
  r.shards = shards_;
  r.cluster = cluster_;
  r.read_only = read_only;
  r.callable = callable_;
  r.caller = op.caller;
  if (cluster_ && numkeys > 0) r.slot = static_cast<int>(key_slot(a[3]));
  const int64_t started_ns = mono_ns();
  r.deadline_ns = started_ns + limits_.budget_ms * 1'000'000;
  st.out_of_memory = false;
  t_run = &r;
  started_ns_[home].store(started_ns, std::memory_order_relaxed);
  lua_sethook(L, hook, LUA_MASKCOUNT, kHookEvery);
  rc = lua_pcall(L, 0, 1, -2);
  lua_sethook(L, nullptr, 0, 0);
  started_ns_[home].store(0, std::memory_order_relaxed);
  t_run = nullptr;
  // What follows (the reply, putting back what the run changed) still touches the heap, out
  // of any protected call: it gets a little room past the cap, so it cannot fail there.
  st.limit = st.cap + kAfterRunSlack;

  if (rc != 0 && (r.over_budget || st.out_of_memory)) {
    // Aborted: none of its writes stay (a limiter must not keep half a decision).
    for (auto it = r.saved.rbegin(); it != r.saved.rend(); ++it)
      it->shard->restore_key(it->key, it->had ? &it->before : nullptr);
    out.clear();
    if (r.over_budget) {
      counters_.over_budget.fetch_add(1, std::memory_order_relaxed);
      out.error(err::script_over_budget(sha, limits_.budget_ms));
    } else {
      out.error(err::script_out_of_memory(sha, short_room));
    }
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
  } else if (rc != 0) {
    error_reply(L, std::string(sha), out);
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    to_reply(L, out, 0, r.resp == 3);
    if (out.is_error()) counters_.errors.fetch_add(1, std::memory_order_relaxed);
  }
  lua_settop(L, 0);
  reset_after_run(L, st.marks);
  if (++st.runs % 50 == 0) lua_gc(L, LUA_GCSTEP, 50);
  if (st.out_of_memory) {  // a state that hit its cap starts afresh
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  st.limit = st.cap;
  heap_bytes_[home].store(static_cast<int64_t>(st.used), std::memory_order_relaxed);
}

}  // namespace fg
