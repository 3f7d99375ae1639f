// The Redis data commands (strings, keys and TTLs): each goes to the request core whole, as
// its words; the shard that owns its key runs it (actors/data_ops.cpp), so arguments are
// checked there, in Redis's order. Only what splitting a command needs is checked here.
#include <cmath>

#include "command_table.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "words.hpp"

namespace fg {

bool data_sync(CommandContext& s, std::string_view key);

// The longest a blocking command may wait (Redis: until its deadline overflows): ten years.
constexpr int64_t kMaxBlockMs = int64_t{10} * 366 * 24 * 3600 * 1000;

namespace {
Request make_data_request(CommandContext& s, Args& a, DataCmd c) {
  Request r;
  r.verb = Verb::kData;
  r.data = c;
  r.resp3 = s.proto() >= 3;
  r.key = data_route_key(c, a);
  r.args = &a;
  r.spec.sync = data_sync(s, r.key);
  return r;
}
}  // namespace

// BLPOP key ... timeout, BRPOP, BZPOPMIN, BZPOPMAX, BRPOPLPUSH source destination timeout,
// BLMOVE ... timeout, BLMPOP and BZMPOP timeout numkeys key ...: the timeout is read here, as
// Redis's getTimeoutFromObjectOrReply reads it (seconds, a float; 0 waits for good), before
// anything else; the pop is the shard's, and the session waits between attempts.
void cmd_block(CommandContext& s, Args& a) {
  const CommandSpec* spec = find_command(a[0]);
  const DataCmd c = spec->run.data;
  const bool first = c == DataCmd::kBLMPop || c == DataCmd::kBZMPop;
  long double seconds;
  if (!parse_long_double(first ? a[1] : a.back(), seconds) || std::isinf(seconds)) {
    return s.local().error(err::kTimeoutNotFloat);
  }
  const long double ms = std::ceil(seconds * 1000.0L);  // (0.001 s waits 1 ms, not for good)
  if (ms < 0) return s.local().error(err::kTimeoutNegative);
  if (ms > static_cast<long double>(kMaxBlockMs)) return s.local().error(err::kTimeoutRange);
  Request r = make_data_request(s, a, c);
  s.block(r, static_cast<int64_t>(ms));
}

void data_request(CommandContext& s, Args& a, DataCmd c) {
  if (data_cmd_info(c).pairs_broken(a.size())) {
    return s.local().error(err::wrong_arity(data_cmd_info(c).name));
  }
  Request r = make_data_request(s, a, c);
  if (c == DataCmd::kEval) {  // (its calls are checked against its user's rights)
    const AclUser* u = s.acl().user();
    if (u && !u->unrestricted()) r.user = u;
  }
  s.request(r, ReplyStyle::kData);
}

// A data command's writes wait for a replica (cluster mode) when the node says so
// (data-replication: sync), or when the key's policy does: a per-key override, or the most
// specific key pattern that matches it, whose policy has `replication: sync`.
bool data_sync(CommandContext& s, std::string_view key) {
  if (s.svc().settings.data_sync) return true;
  if (key.empty()) return false;
  const PolicySet& ps = s.policies();
  if (!ps.sync_keys) return false;  // (no glob matching on the request path for nothing)
  Result<const LimitSpec*> p = ps.lookup(key, {});
  return p.ok() && (*p)->sync;
}

// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key: the key's shard answers; HELP here.
void cmd_object(CommandContext& s, Args& a) {
  if (iequals(a[1], "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Print this help."};
    s.local().help(kHelp);
    return;
  }
  const bool known = iequals(a[1], "encoding") || iequals(a[1], "refcount") ||
                     iequals(a[1], "idletime") || iequals(a[1], "freq");
  if (!known) return s.local().error(err::subcommand_syntax(a[1], "OBJECT"));
  if (a.size() != 3) return s.local().error(err::wrong_arity("object|" + to_lower(a[1])));
  data_request(s, a, DataCmd::kObject);
}

namespace {

// Whether `a` names one of `container`'s subcommands as its registry row lists them (their
// arity was checked before the handler ran, from the same rows: RespSession::refused); else
// Redis's refusal of an unknown one.
bool known_subcommand(CommandContext& s, Args& a, const char* container, const char* help) {
  const CommandSpec* c = find_command(container);
  if (c && subcommand_of(*c, a)) return true;
  s.local().error(err::unknown_subcommand(a[1], help));
  return false;
}

// XREAD's and XREADGROUP's BLOCK ms (milliseconds, 0: for good): a client that finds nothing
// waits as a blocking pop does and is tried again when a stream changes; inside a
// transaction it is tried once (its BLOCK taken off), as Redis does. The shard checks the
// rest of the words (a script's too).
void read_streams(CommandContext& s, Args& a, DataCmd data) {
  size_t block_at = 0;
  for (size_t i = 1; i + 1 < a.size(); ++i) {
    if (iequals(a[i], "streams")) break;
    if (iequals(a[i], "block")) {
      block_at = i;
      ++i;
    } else if (iequals(a[i], "count")) {
      ++i;
    } else if (iequals(a[i], "group")) {
      i += 2;  // (its group and consumer, whatever they are named)
    }
  }
  if (block_at == 0) return data_request(s, a, data);
  int64_t ms;  // (Redis's getTimeoutFromObjectOrReply, in milliseconds)
  if (!parse_int(a[block_at + 1], ms)) return s.local().error(err::kTimeoutNotInteger);
  if (ms < 0) return s.local().error(err::kTimeoutNegative);
  if (ms > kMaxBlockMs) return s.local().error(err::kTimeoutRange);
  if (!s.can_wait()) {
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(block_at),
            a.begin() + static_cast<std::ptrdiff_t>(block_at) + 2);
    return data_request(s, a, data);
  }
  Request r = make_data_request(s, a, data);
  s.block(r, ms);
}

}  // namespace

// XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...
void cmd_xread(CommandContext& s, Args& a) { read_streams(s, a, DataCmd::kXRead); }

// XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...: a
// blocked reader waits for entries its group has not delivered (">").
void cmd_xreadgroup(CommandContext& s, Args& a) { read_streams(s, a, DataCmd::kXReadGroup); }

// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER key group ...: the key's shard
// answers; HELP here.
void cmd_xgroup(CommandContext& s, Args& a) {
  if (iequals(a[1], "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help."};
    s.local().help(kHelp);
    return;
  }
  if (known_subcommand(s, a, "xgroup", "XGROUP HELP")) data_request(s, a, DataCmd::kXGroup);
}

// XINFO STREAM key [FULL [COUNT n]] | GROUPS key | CONSUMERS key group: the key's shard
// answers; HELP here.
void cmd_xinfo(CommandContext& s, Args& a) {
  if (iequals(a[1], "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help."};
    s.local().help(kHelp);
    return;
  }
  if (known_subcommand(s, a, "xinfo", "XINFO HELP")) data_request(s, a, DataCmd::kXInfo);
}

// MEMORY USAGE key [SAMPLES count]: the key's shard estimates it; HELP here.
void cmd_memory(CommandContext& s, Args& a) {
  if (iequals(a[1], "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value (an estimate: every",
        "    element is counted, SAMPLES is accepted).",
        "HELP",
        "    Print this help."};
    s.local().help(kHelp);
    return;
  }
  if (!iequals(a[1], "usage")) return s.local().error(err::subcommand_syntax(a[1], "MEMORY"));
  if (a.size() < 3) return s.local().error(err::wrong_arity("memory|usage"));
  if (a.size() != 3) {
    int64_t samples = 0;
    if (a.size() != 5 || !iequals(a[3], "samples")) return s.local().error(err::kSyntax);
    if (!parse_int(a[4], samples) || samples < 0) return s.local().error(err::kNotInteger);
  }
  data_request(s, a, DataCmd::kObject);
}

void cmd_multi(CommandContext& s, Args&) { s.multi(); }
void cmd_exec(CommandContext& s, Args&) { s.exec(); }
void cmd_discard(CommandContext& s, Args&) { s.discard(); }
void cmd_watch(CommandContext& s, Args& a) { s.watch(a); }
void cmd_unwatch(CommandContext& s, Args&) { s.unwatch(); }

}  // namespace fg
