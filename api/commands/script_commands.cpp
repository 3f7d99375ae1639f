// Lua scripts: EVAL, EVALSHA and their read-only forms go to the request core as data
// commands (the shard that holds their keys runs them, api/script); SCRIPT answers here.
#include "errors.hpp"
#include "handlers.hpp"
#include "script_engine.hpp"
#include "words.hpp"

namespace fg {

// What the door can check of EVAL before its op goes to the core (the engine checks again
// what a forwarded or script-called EVAL brings).
void cmd_eval(CommandContext& s, Args& a) {
  if (!s.svc().scripts) return s.local().error(err::unknown_command(a));
  int64_t numkeys = 0;
  if (!parse_int(a[2], numkeys)) return s.local().error(err::kNotInteger);
  if (numkeys > static_cast<int64_t>(a.size()) - 3) {
    return s.local().error(err::kNumkeysTooMany);
  }
  if (numkeys < 0) return s.local().error(err::kNumkeysNegative);
  if (iequals(a[0], "evalsha") || iequals(a[0], "evalsha_ro")) {
    if (a[1].size() != 40) return s.local().error(err::kNoScript);
  }
  data_request(s, a, DataCmd::kEval);
}

void cmd_script(CommandContext& s, Args& a) {
  ScriptEngine* eng = s.svc().scripts;
  if (!eng) return s.local().error(err::unknown_command(a));
  RespWriter w = s.local();
  if (iequals(a[1], "load") && a.size() == 3) {
    ScriptCache::Owner owner;  // (a restricted user's script counts against its share)
    if (const AclUser* u = s.acl().user(); u && !u->unrestricted()) {
      owner.name = u->name();
      if (const Accounts* acc = s.svc().accounts) {
        owner.max_scripts = acc->cap(u->account(), Accounts::kScripts);
        owner.max_bytes = acc->cap(u->account(), Accounts::kScriptBytes);
      }
    }
    Result<std::string> sha = eng->load(a[2], owner);
    if (!sha.ok()) return w.error(sha.error());
    return w.bulk(*sha);
  }
  if (iequals(a[1], "exists") && a.size() >= 3) {
    w.array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) w.integer(eng->exists(a[i]) ? 1 : 0);
    return;
  }
  if (iequals(a[1], "flush") && a.size() <= 3) {
    if (a.size() == 3 && !iequals(a[2], "sync") && !iequals(a[2], "async")) {
      return w.error(err::kScriptFlushOption);
    }
    eng->flush();
    return w.ok();
  }
  if (iequals(a[1], "kill") && a.size() == 2) {
    // (a script never outlives its budget: there is never one to kill)
    return w.error(err::kNotBusy);
  }
  if (iequals(a[1], "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache (on every node of the cluster).",
        "KILL",
        "    Kill the currently executing Lua script (there never is one: scripts have a budget).",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Print this help."};
    w.help(kHelp);
    return;
  }
  for (const char* sub : {"load", "exists", "flush", "kill", "help"}) {
    if (iequals(a[1], sub)) return w.error(err::wrong_arity("script|" + to_lower(a[1])));
  }
  w.error(err::unknown_subcommand(a[1], "SCRIPT HELP"));
}

// FUNCTION: Redis 7's function libraries are not part of Floodgate (EVAL and EVALSHA are,
// with one script cache for the whole cluster). What can be answered truthfully without
// them is: there are none (LIST, STATS, DUMP's empty payload is not given), deleting one
// finds none, flushing them leaves none. Loading one is refused with the reason.
void cmd_function(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  const std::string_view sub = a[1];
  const size_t n = a.size();
  if (iequals(sub, "flush") && n <= 3) {
    if (n == 3 && !iequals(a[2], "sync") && !iequals(a[2], "async")) {
      return w.error(err::kFunctionFlushOption);
    }
    return w.ok();
  }
  if (iequals(sub, "list")) {
    for (size_t j = 2; j < n; ++j) {
      if (iequals(a[j], "withcode")) continue;
      if (iequals(a[j], "libraryname") && j + 1 < n) {
        ++j;
        continue;
      }
      return w.error(err::unknown_argument(a[j]));
    }
    return w.array(0);
  }
  if (iequals(sub, "delete") && n == 3) return w.error(err::kLibraryNotFound);
  if (iequals(sub, "stats") && n == 2) {
    w.map(2);
    w.bulk("running_script");
    w.null();
    w.bulk("engines");
    w.map(1);
    w.bulk("LUA");
    w.map(2);
    w.bulk("libraries_count");
    w.integer(0);
    w.bulk("functions_count");
    w.integer(0);
    return;
  }
  if (iequals(sub, "kill") && n == 2) return w.error(err::kNotBusy);
  if ((iequals(sub, "load") || iequals(sub, "restore") || iequals(sub, "dump")) && n >= 2) {
    return w.error(err::kNoFunctions);
  }
  if (iequals(sub, "help") && n == 2) {
    static constexpr const char* kHelp[] = {
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST [LIBRARYNAME <pattern>] [WITHCODE]",
        "    Return the function libraries (there are none: use EVAL and EVALSHA).",
        "STATS",
        "    Return information about the function engine.",
        "DELETE <library-name>",
        "    Delete a library (there are none).",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries (there are none).",
        "HELP",
        "    Print this help."};
    w.help(kHelp);
    return;
  }
  for (const char* name : {"flush", "list", "delete", "stats", "kill", "help"}) {
    if (iequals(sub, name)) return w.error(err::wrong_arity("function|" + to_lower(sub)));
  }
  w.error(err::unknown_subcommand(sub, "FUNCTION HELP"));
}

}  // namespace fg
