// The command registry: one row per command, holding every fact about it that more than one
// place needs — name, arity, flags, where its keys are and what it does with them, its ACL
// categories and subcommands, what runs it (a handler, or a data op for the owning shard),
// and its one-line doc. The dispatch table, COMMAND (COUNT, LIST, INFO, DOCS), the ACL
// catalog, the script allow-list, the MULTI rules and cluster routing are all read from it.
// Adding a command is one row here, its handler or shard op, and its tests.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acl.hpp"
#include "data_cmd.hpp"
#include "request.hpp"
#include "words.hpp"

namespace fg {

class CommandContext;

enum CommandFlag : uint32_t {
  kNoAuth = 1,      // allowed before AUTH
  kBarrier = 2,     // changes session state: runs only after earlier keyed work completes
  kWrite = 4,       // may change data (COMMAND's "write", else "readonly"; ACL @write)
  kFast = 8,        // constant time (COMMAND's "fast"; ACL @fast, else @slow)
  kScript = 16,     // runs a Lua script: how many go in one batch follows what they cost
  kNoMulti = 32,    // refused inside MULTI (Redis's no_multi: SAVE, SHUTDOWN)
  kNotQueued = 64,  // inside MULTI, runs at once instead of being queued (MULTI, EXEC, ...)
  kNoScript = 128,  // a data op a script may not call (redis.call): every shard, transactions
  // Allowed to a RESP2 connection that is subscribed (Redis's list: the (un)subscribes,
  // PING, QUIT, RESET); every other command is refused there.
  kSubscribeMode = 256,
  // Its replies are pushes (pub/sub confirmations): sent even under CLIENT REPLY OFF.
  kPushes = 512,
  // A limiter's decision, worthless once late: refused undecided when it waited past the
  // connection's deadline (request-deadline, FG.DEADLINE).
  kDecides = 1024,
};

// What a command does with its keys (Redis's key-spec flags): reads them (ACL %R~), writes
// them (%W~); neither: the key only has to match one of the user's patterns.
enum KeyAccess : uint8_t { kNoAccess = 0, kReads = 1, kWrites = 2, kReadsWrites = 3 };

// Where a command's keys are, as COMMAND reports them: first (0: none), last (-1: the last
// argument, -2: the one before it, BLPOP's), step; numkeys_at > 0: a count at that position with
// the keys right after it (EVAL's way, not reported as key positions).
struct KeySpec {
  int8_t first = 0;
  int8_t last = 0;
  int8_t step = 1;
  int8_t numkeys_at = 0;
  uint8_t access = kNoAccess;
  bool reads_with_get = false;  // SET: reads its key too when given GET
  bool after_streams =
      false;  // XREAD: the first half of the words after STREAMS (keys_after_streams)
};
constexpr KeySpec kNoKeys{};
// One key, the first argument.
constexpr KeySpec key1(uint8_t access) { return {1, 1, 1, 0, access, false}; }
// Every argument from the first on, `step` apart (MSET's key-value pairs: 2).
constexpr KeySpec all_keys(uint8_t access, int8_t step = 1) {
  return {1, -1, step, 0, access, false};
}
// A count at argument `at` (EVAL's 2, SINTERCARD's 1), then that many keys.
constexpr KeySpec counted_keys(uint8_t access, int8_t at = 2) {
  return {0, 0, 1, at, access, false};
}

using Handler = void (*)(CommandContext&, std::vector<std::string_view>&);

// What runs a command: a handler, or a data op the owning shard runs (actors/data_ops.cpp)
// through the request core, or both: a handler that checks what the door can check before
// it hands its data op to the core (EVAL: numkeys, the SHA's length).
struct CommandRun {
  CommandRun(Handler h) : handler(h) {}  // NOLINT: rows name either one bare
  CommandRun(DataCmd op) : data(op) {}   // NOLINT
  CommandRun(Handler h, DataCmd op) : handler(h), data(op) {}
  Handler handler = nullptr;
  DataCmd data = DataCmd::kNone;
};

// A container's subcommand as ACL rules name it ("config|get"), with its categories
// (written out in full: subcommands have no flags here).
struct SubcommandSpec {
  const char* name;
  const char* acl;
  int arity = 0;  // Redis's convention, the container's name included (0: its handler checks)
};

struct CommandSpec {
  const char* name;  // lower case, as COMMAND reports it
  int arity;         // Redis convention: N = exactly N words, -N = at least N
  uint32_t flags;
  // ACL categories besides those the flags imply (Redis's rule: @write from kWrite unless
  // @scripting, @fast from kFast, else @slow): the data type, @read, @admin, @dangerous...
  const char* acl;
  KeySpec keys;
  CommandRun run;
  const char* group;
  const char* since;
  const char* summary;
  const char* syntax;  // arguments after the name, for COMMAND DOCS and HELP texts
  std::vector<SubcommandSpec> subcommands = {};
  AclCommand::Channels channels = AclCommand::Channels::kNone;  // pub/sub: its channels
  // COMMAND INFO's tips its data op does not imply, space-separated (its nondeterministic
  // output; a request policy of its own): command_docs.cpp adds the op's.
  const char* tips = nullptr;

  bool keyed() const { return keys.first > 0; }
  // Whether any word may be a key: fixed, counted (EVAL's) or after a keyword (XREAD's).
  bool has_keys() const { return keyed() || keys.numkeys_at > 0 || keys.after_streams; }
  // The positions of its keys in `words` (name first) when it has fixed ones: calls f(i)
  // for each. (Counted keys, EVAL's, are not walked here.)
  template <class Words, class F>
  void for_each_key(const Words& words, F&& f) const {
    if (keys.after_streams) {
      const auto [first, end] = keys_after_streams(words);
      for (size_t j = first; j < end; ++j) f(j);
      return;
    }
    if (!keyed() || words.size() <= static_cast<size_t>(keys.first)) return;
    const size_t last = keys.last < 0 ? words.size() + keys.last : static_cast<size_t>(keys.last);
    for (size_t j = static_cast<size_t>(keys.first); j <= last && j < words.size();
         j += static_cast<size_t>(keys.step))
      f(j);
  }
  // Every key's position in `words` (name first), as COMMAND GETKEYS answers: the fixed
  // ones, then those after a count (EVAL's), if the count is a number that fits.
  template <class Words>
  std::vector<size_t> key_positions(const Words& words) const {
    std::vector<size_t> at;
    for_each_key(words, [&](size_t j) { at.push_back(j); });
    const auto count_at = static_cast<size_t>(keys.numkeys_at);
    int64_t n = 0;
    if (count_at > 0 && count_at < words.size() && parse_int(words[count_at], n) && n >= 0 &&
        static_cast<uint64_t>(n) < words.size() - count_at) {
      for (size_t i = 1; i <= static_cast<size_t>(n); ++i) at.push_back(count_at + i);
    }
    return at;
  }
};

const CommandSpec* find_command(std::string_view name);  // case-insensitive
// The container's subcommand `words` name (its second word), if it has one by that name.
const SubcommandSpec* subcommand_of(const CommandSpec& spec,
                                    const std::vector<std::string_view>& words);

// A native op (api/native/native.proto's Op) that the request core serves: its verb, and
// the command (a row of the registry) whose ACL rights it needs.
struct NativeOp {
  int op;
  Verb verb;
  const char* command;
};
const std::vector<NativeOp>& native_ops();
const NativeOp* find_native_op(int op);  // null: not one the core serves
const std::vector<CommandSpec>& all_commands();

// Runs `spec` for `a`: its handler, or its data op through the request core.
void run_command(const CommandSpec& spec, CommandContext& s, std::vector<std::string_view>& a);

// Every command and subcommand with its ACL categories and keys; a command's entry is its
// command_id (acl_commands.cpp).
const AclCatalog& acl_catalog();

// What a script's redis.call may run of `name` (case-insensitive): its arity (0: no such
// command), and its data op (kNone: not allowed from a script). TIME and PING, which the
// engine answers itself, report their arity and no op.
// (The engine's type: script_engine.hpp.)
struct ScriptCallable;
ScriptCallable script_callable(std::string_view name);

// Ids for metrics: a RESP command's place in the table; native ops from kNativeCommandBase;
// kUnknownCommandId for unknown commands and protocol errors.
constexpr uint16_t kNativeCommandBase = 384;
constexpr uint16_t kUnknownCommandId = 511;
constexpr uint16_t kRlsCommandId = 510;   // the gateway door's ShouldRateLimit (api/rls)
constexpr uint16_t kRlqsCommandId = 509;  // the quota service's slices and charges (api/rls)
inline uint16_t command_id(const CommandSpec* c) {
  return static_cast<uint16_t>(c - all_commands().data());
}
// "fg.take", "native.take", "unknown": the name a command id is reported under.
std::string command_id_name(uint16_t id);

}  // namespace fg
