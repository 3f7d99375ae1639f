// The Lua engine: a state per shard, and each run: its budget, its heap's room, its undo.
// (What the engine's files share, and the rule they keep about Lua's errors:
// script_run.hpp.)
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "errors.hpp"
#include "key_slot.hpp"
#include "lua_libs.hpp"
#include "sandbox.hpp"
#include "script_run.hpp"
#include "words.hpp"

namespace fg {

using namespace script;  // (this file's half of the engine)

std::string sha1_hex(std::string_view data) {
  std::string out(2 * SHA_DIGEST_LENGTH, '0');
  sha1_hex_into(data, out.data());
  return out;
}

namespace {

// A run's math.random seed (srand48's layout: 32 bits and 0x330E), the next of a sequence
// only the engine advances (splitmix64), so no run's math.randomseed reaches the next run.
uint64_t next_run_seed(uint64_t& seeds) {
  uint64_t z = (seeds += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z & 0xFFFFFFFFull) << 16 | 0x330E;
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
  if (lua_istable(L, -1)) {  // (the handler's plain table: read raw all the same)
    lua_pushliteral(L, "err");
    lua_rawget(L, -2);
    if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!msg.empty() && msg[0] == '-') msg.erase(0, 1);
    lua_pushliteral(L, "source");
    lua_rawget(L, -2);
    lua_pushliteral(L, "line");
    lua_rawget(L, -3);
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

Result<ScriptFlags> parse_shebang(std::string_view body) {
  ScriptFlags f;
  if (body.substr(0, 2) != "#!") return f;
  const size_t end = body.find('\n');
  if (end == std::string_view::npos) return Error{err::kShebangInvalid};
  f.compat = false;
  f.length = end;
  std::vector<std::string_view> parts;  // (the line's words, split at blanks as Redis does)
  const std::string_view line = body.substr(0, end);
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) parts.push_back(line.substr(start, i - start));
  }
  if (parts.empty()) return Error{err::kShebangNoEngine};
  if (parts[0] != "#!lua") return Error{err::shebang_engine(parts[0])};
  for (size_t j = 1; j < parts.size(); ++j) {
    if (parts[j].substr(0, 6) != "flags=") return Error{err::shebang_option(parts[j])};
    std::string_view list = parts[j].substr(6);
    // (every name between commas counts, an empty one too, as Redis splits them; "flags="
    // alone names none)
    for (size_t k = 0; !list.empty() && k != std::string_view::npos;) {
      const size_t comma = list.find(',', k);
      const std::string_view flag = list.substr(k, comma - k);
      if (flag == "no-writes") {
        f.no_writes = true;
      } else if (flag == "no-cluster") {
        f.no_cluster = true;
      } else if (flag == "allow-cross-slot-keys") {
        f.allow_cross_slot = true;
      } else if (flag != "allow-oom" && flag != "allow-stale") {
        return Error{err::shebang_flag(flag)};
      }
      k = comma == std::string_view::npos ? comma : comma + 1;
    }
  }
  return f;
}

Result<std::string> ScriptEngine::load(std::string_view body, const ScriptCache::Owner& owner) {
  const std::string sha = sha1_hex(body);
  if (cache_.snapshot()->has(sha)) return sha;
  const Result<ScriptFlags> flags = parse_shebang(body);
  if (!flags) return Error{flags.error()};
  body.remove_prefix(flags->length);  // (its line feed stays: line numbers hold)
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
  if (Status st = cache_.add(sha, body, owner); !st.ok()) return Error{st.error()};
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
  // Its shebang line, if any: what the script may do.
  std::string_view body = by_sha ? std::string_view(*known) : a[1];
  const Result<ScriptFlags> flags = parse_shebang(body);
  const char* refusal = nullptr;
  if (!flags) {
    refusal = flags.error().c_str();
  } else if (!flags->compat && flags->no_cluster && cluster_) {
    refusal = err::kScriptNoCluster;
  } else if (!flags->compat && !flags->no_writes && read_only) {
    refusal = err::kScriptWriteFlagRo;
  }
  if (refusal) {
    st.limit = st.cap;
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return out.error(refusal);
  }
  body.remove_prefix(flags->length);
  // Its function and arguments, in protected calls.
  Setup setup;
  setup.fname = fname;
  setup.body = body;
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
      ScriptCache::Owner owner;  // (a restricted user's script counts against its share)
      if (op.caller) {
        owner.name = op.caller->caller_name();
        if (limits_.accounts) {
          owner.max_scripts = limits_.accounts->cap(op.account, Accounts::kScripts);
          owner.max_bytes = limits_.accounts->cap(op.account, Accounts::kScriptBytes);
        }
      }
      if (Status kept = cache_.add(std::string(sha), a[1], owner); !kept.ok()) {
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
  r.read_only = read_only || flags->no_writes;
  r.allow_cross_slot = flags->allow_cross_slot;
  r.callable = callable_;
  r.publish = publish_ ? &publish_ : nullptr;
  r.caller = op.caller;
  r.account = op.account;
  if (cluster_ && numkeys > 0) r.slot = static_cast<int>(key_slot(a[3]));
  const int64_t started_ns = mono_ns();
  r.deadline_ns = run_clock_ns() + limits_.budget_ms * 1'000'000;
  st.out_of_memory = false;
  st.random = next_run_seed(st.seeds);
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
