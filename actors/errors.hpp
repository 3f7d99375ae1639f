// Every error text a client can receive, in one place (header-only, at the bottom of the
// arrows, so the RESP parser, the request core, the doors and the client library all name
// them from here). Where Redis has a wording, it is Redis's, so client libraries recognise it:
// the word before the first space is the error code (ERR, WRONGTYPE, MOVED, TRYAGAIN, ...).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fg::err {

// A reply text without its code word ("ERR limit is out of range" -> "limit is out of
// range"), for messages that are not replies (config file errors).
inline std::string_view reason(std::string_view text) {
  const size_t sp = text.find(' ');
  return sp == std::string_view::npos ? text : text.substr(sp + 1);
}

// --- arguments -------------------------------------------------------------------------
inline constexpr char kNotInteger[] = "ERR value is not an integer or out of range";
inline constexpr char kNotPositive[] = "ERR value is out of range, must be positive";
inline constexpr char kSyntax[] = "ERR syntax error";
// (getRangeLongFromObjectOrReply over -LONG_MAX..LONG_MAX: SRANDMEMBER's count)
inline constexpr char kCountOutOfRange[] =
    "ERR value is out of range, value must between -9223372036854775807 and "
    "9223372036854775807";
inline constexpr char kValueOutOfRange[] = "ERR value is out of range";
inline constexpr char kNumkeysPositive[] = "ERR numkeys should be greater than 0";
inline constexpr char kLimitNegative[] = "ERR LIMIT can't be negative";
inline constexpr char kUnblockReason[] = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
// CLIENT KILL and CLIENT LIST, as Redis words them.
inline constexpr char kNoSuchClient[] = "ERR No such client";
inline constexpr char kClientIdPositive[] = "ERR client-id should be greater than 0";
inline constexpr char kMaxageNotInteger[] = "ERR maxage is not an integer or out of range";
inline constexpr char kMaxagePositive[] = "ERR maxage should be greater than 0";
inline constexpr char kInvalidClientId[] = "ERR Invalid client ID";
inline std::string unknown_client_type(std::string_view t) {
  return "ERR Unknown client type '" + std::string(t) + "'";
}
inline std::string no_such_user(std::string_view u) {
  return "ERR No such user '" + std::string(u) + "'";
}
// CLIENT LIST DOOR / CLIENT KILL DOOR (Floodgate's filter).
inline std::string unknown_door(std::string_view d) {
  return "ERR Unknown door '" + std::string(d) + "' (resp, native or rls)";
}
inline constexpr char kUnblocked[] = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
// A limiter command that waited past its connection's deadline (request-deadline,
// FG.DEADLINE): refused, not decided.
inline std::string past_deadline(int64_t waited_ms, int64_t deadline_ms) {
  return "BUSY waited " + std::to_string(waited_ms) + " ms, past its " +
         std::to_string(deadline_ms) + " ms deadline: not decided";
}
inline constexpr char kTimeoutNotFloat[] = "ERR timeout is not a float or out of range";
inline constexpr char kTimeoutNegative[] = "ERR timeout is negative";
inline constexpr char kTimeoutRange[] = "ERR timeout is out of range";
inline constexpr char kCountPositive[] = "ERR count should be greater than 0";
inline constexpr char kWeightNotFloat[] = "ERR weight value is not a float";
inline std::string at_least_one_key(std::string_view command) {
  return "ERR at least 1 input key is needed for '" + std::string(command) + "' command";
}
inline constexpr char kSameObject[] = "ERR source and destination objects are the same";
// (the request core holds every key's shard in one step: not expected)
inline constexpr char kKeysApart[] = "ERR the command's keys are not held together";
inline constexpr char kCopyLeases[] =
    "ERR COPY does not copy a concurrency key (its leases belong to their holders)";
// (never read: a client whose replies outgrow their room is closed)
inline constexpr char kReplyRoom[] =
    "ERR client evicted: its replies outgrew its share of maxmemory-clients";
inline constexpr char kKeyTooLong[] = "ERR key is too long (at most 4096 bytes)";
inline constexpr char kBadLease[] = "ERR invalid lease id";
inline constexpr char kHolderRequired[] = "ERR a holder is required";
inline constexpr char kReserveTtl[] = "ERR a reservation's ttl_ms must be between 1 and 60000";
inline constexpr char kNoBound[] = "ERR bound leases are not available here";
inline constexpr char kUnknownKind[] = "ERR unknown limiter kind";
inline constexpr char kLimitNeedsKind[] =
    "ERR a limit is a kind (token_bucket, gcra, fixed_window, sliding_log, sliding_window, "
    "calendar_window, concurrency) and its parameters";
inline constexpr char kConcurrencyPolicy[] =
    "ERR policy is a concurrency limit: use FG.ACQUIRE / FG.RELEASE";
inline constexpr char kNotConcurrencyPolicy[] =
    "ERR policy is not a concurrency limit: use FG.TAKE";

// Why a limit's parameters are refused (validate() in limit_spec).
inline constexpr char kBucketPositive[] = "ERR capacity, refill and period must be positive";
inline constexpr char kBucketRange[] = "ERR capacity, refill or period is out of range";
inline constexpr char kBucketProduct[] = "ERR capacity / refill * period is out of range";
inline constexpr char kGcraBurstNegative[] = "ERR max_burst must not be negative";
inline constexpr char kGcraPositive[] = "ERR count and period must be positive";
inline constexpr char kGcraRange[] = "ERR max_burst, count or period is out of range";
// GCRA (Redis's gcra.c)
inline constexpr char kGcraPeriod[] = "ERR period must be > 0 and < 1e12";
inline constexpr char kGcraMissingTokens[] = "ERR Missing TOKENS value";
// Redis's getRangeLongFromObjectOrReply.
inline std::string out_of_range(int64_t lo, int64_t hi) {
  return "ERR value is out of range, value must between " + std::to_string(lo) + " and " +
         std::to_string(hi);
}
inline constexpr char kGcraProduct[] = "ERR max_burst * period / count is out of range";
inline constexpr char kWindowPositive[] = "ERR limit and window must be positive";
inline constexpr char kWindowRange[] = "ERR window is out of range";
inline constexpr char kLogLimit[] = "ERR sliding_log limit must be at most 100000";
inline constexpr char kLimitRange[] = "ERR limit is out of range";
inline constexpr char kLeasePositive[] = "ERR limit and ttl must be positive";
inline constexpr char kLeaseLimit[] = "ERR concurrency limit must be at most 100000";
inline constexpr char kTtlRange[] = "ERR ttl is out of range";
inline constexpr char kWaitRange[] = "ERR WAIT must be between 0 and 60000 milliseconds";
inline constexpr char kWaitKind[] =
    "ERR WAIT is for token_bucket and gcra limits (their debt keeps the waiters in order)";
inline constexpr char kTooManyWaiters[] =
    "ERR too many requests are waiting here (max-waiters, max-waiters-per-key)";
inline constexpr char kTakeAllHere[] = "ERR FG.TAKEALL is not allowed in a transaction or a script";
inline constexpr char kNoRlsConfig[] =
    "ERR this node has no rls-config (the gateway door's rate-limit configuration)";
inline constexpr char kTakeAllExpired[] =
    "TRYAGAIN a reservation was lost before it was committed (the others were given back)";
inline constexpr char kTakeAllCount[] = "ERR FG.TAKEALL takes 1 to 64 limits";
inline constexpr char kTakeAllConcurrency[] =
    "ERR FG.TAKEALL is for rate limits: a concurrency limit is taken with FG.ACQUIRE";
inline constexpr char kCalendarUnit[] =
    "ERR calendar_window's period must be day, week, month or year";
inline constexpr char kUnknownTimeZone[] =
    "ERR unknown time zone (a name of the tz database, such as UTC or Europe/Berlin)";

inline std::string kind_params(std::string_view kind, size_t n) {
  return "ERR " + std::string(kind) + " needs " + std::to_string(n) + " parameters";
}
inline std::string wrong_arity(std::string_view command) {  // lower case, "client|setname"
  return "ERR wrong number of arguments for '" + std::string(command) + "' command";
}
inline std::string unknown_command(const std::vector<std::string_view>& args) {
  std::string s = "ERR unknown command '";
  s.append(args[0].substr(0, 128));
  s += "', with args beginning with: ";
  for (size_t i = 1; i < args.size() && s.size() < 300; ++i) {
    s += '\'';
    s.append(args[i].substr(0, 128));
    s += "' ";
  }
  return s;
}
// `help` is what the command's HELP is called ("CLIENT HELP"); empty: none offered.
inline std::string unknown_subcommand(std::string_view sub, std::string_view help) {
  std::string s = "ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'.";
  if (!help.empty()) s += " Try " + std::string(help) + ".";
  return s;
}
inline std::string config_get_only(std::string_view sub) {
  return "ERR unknown subcommand '" + std::string(sub.substr(0, 128)) +
         "'. Floodgate supports CONFIG GET, CONFIG SET, CONFIG REWRITE and CONFIG RESETSTAT.";
}
inline std::string config_unknown(std::string_view name) {
  return "ERR Unknown option or number of arguments for CONFIG SET - '" + std::string(name) + "'";
}
inline std::string config_immutable(std::string_view name) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) +
         "') - can't set immutable config";
}
inline std::string config_set_failed(std::string_view name) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "')";
}
inline std::string unknown_op(int op) { return "ERR unknown op " + std::to_string(op); }

// --- data commands (Redis's t_string.c and expire.c wordings) ---------------------------
inline constexpr char kNotFloat[] = "ERR value is not a valid float";
inline constexpr char kIncrOverflow[] = "ERR increment or decrement would overflow";
// APPEND and SETRANGE past the longest string a node keeps (proto-max-bulk-len, as Redis).
inline constexpr char kStringTooLong[] =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr char kOffsetOutOfRange[] = "ERR offset is out of range";
// Lists (t_list.c).
inline constexpr char kNoSuchKey[] = "ERR no such key";
inline constexpr char kIndexOutOfRange[] = "ERR index out of range";
inline constexpr char kLposRankZero[] =
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list";
inline constexpr char kLposCountNegative[] = "ERR COUNT can't be negative";
inline constexpr char kLposMaxlenNegative[] = "ERR MAXLEN can't be negative";
inline constexpr char kDecrementOverflow[] = "ERR decrement would overflow";
inline constexpr char kIncrExBounds[] = "ERR LBOUND must not be greater than UBOUND";
inline constexpr char kNanOrInfinity[] = "ERR increment would produce NaN or Infinity";
inline constexpr char kExpireNxOptions[] =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr char kExpireGtLt[] = "ERR GT and LT options at the same time are not compatible";
inline constexpr char kHashNotInteger[] = "ERR hash value is not an integer";
inline constexpr char kHashNotFloat[] = "ERR hash value is not a float";
inline constexpr char kNanOrInfinityValue[] = "ERR value is NaN or Infinity";
inline constexpr char kZAddXxNx[] = "ERR XX and NX options at the same time are not compatible";
inline constexpr char kZAddGtLtNx[] =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
inline constexpr char kZAddIncrPair[] = "ERR INCR option supports a single increment-element pair";
inline constexpr char kZScoreNan[] = "ERR resulting score is not a number (NaN)";
inline constexpr char kMinMaxNotFloat[] = "ERR min or max is not a float";
inline constexpr char kZRangeLimit[] =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
inline constexpr char kLexRange[] = "ERR min or max not valid string range item";
inline constexpr char kLexWithScores[] =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
inline constexpr char kInvalidCursor[] = "ERR invalid cursor";
inline constexpr char kMalformedReply[] = "ERR the key's owner sent a malformed reply";
inline constexpr char kCrossSlot[] = "CROSSSLOT Keys in request don't hash to the same slot";
// A collection at its cap (Redis has none; ours bound what one command costs a shard):
// "ERR a hash holds at most 10000 fields".
inline std::string collection_full(std::string_view what, size_t cap, std::string_view items) {
  return "ERR " + std::string(what) + " holds at most " + std::to_string(cap) + " " +
         std::string(items);
}
inline std::string invalid_expire(std::string_view command) {  // lower case, "set"
  return "ERR invalid expire time in '" + std::string(command) + "' command";
}
// (Redis writes error texts on one line: newlines in what a client sent become spaces.)
inline std::string unsupported_option(std::string_view opt) {
  std::string s = "ERR Unsupported option " + std::string(opt.substr(0, 128));
  for (char& c : s)
    if (c == '\r' || c == '\n') c = ' ';
  return s;
}

// --- streams (Redis's t_stream.c) ------------------------------------------------------
inline constexpr char kStreamBadId[] = "ERR Invalid stream ID specified as stream command argument";
inline constexpr char kStreamIdZero[] = "ERR The ID specified in XADD must be greater than 0-0";
inline constexpr char kStreamExhausted[] =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
inline constexpr char kStreamIdSmall[] =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
inline constexpr char kStreamTooLarge[] = "ERR Elements are too large to be stored";
inline constexpr char kStreamMaxlenMinid[] =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
inline constexpr char kStreamMaxlenNegative[] = "ERR The MAXLEN argument must be >= 0.";
inline constexpr char kStreamLimitNegative[] = "ERR The LIMIT argument must be >= 0.";
inline constexpr char kStreamLimitWithoutTrim[] =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
inline constexpr char kStreamTrimNeedsStrategy[] =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
inline constexpr char kStreamLimitWithoutApprox[] =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
inline constexpr char kStreamStartInterval[] = "ERR invalid start ID for the interval";
inline constexpr char kStreamEndInterval[] = "ERR invalid end ID for the interval";
inline constexpr char kStreamUnbalanced[] =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
inline constexpr char kStreamGroupOption[] =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr char kStreamNoAckOption[] =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr char kStreamGtId[] =
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option.";
inline constexpr char kStreamEntriesAdded[] = "ERR entries_added must be positive";
inline constexpr char kStreamSetIdMaxDeleted[] =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
inline constexpr char kStreamSetIdSmall[] =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
inline constexpr char kStreamSetIdEntries[] =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";
inline constexpr char kTimeoutNotInteger[] = "ERR timeout is not an integer or out of range";
inline std::string block_in_script(std::string_view command) {  // as the script wrote it
  return "ERR " + std::string(command) + " command is not allowed with BLOCK option from scripts";
}
inline constexpr char kStreamMissingGroup[] = "ERR Missing GROUP option for XREADGROUP";
inline constexpr char kStreamDollarInGroup[] =
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set.";
inline constexpr char kStreamGroupGone[] =
    "NOGROUP the consumer group this client was blocked on no longer exists";
inline constexpr char kStreamKeyGone[] = "UNBLOCKED the stream key no longer exists";
inline constexpr char kStreamGroupNeedsKey[] =
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically.";
inline constexpr char kStreamEntriesRead[] = "ERR value for ENTRIESREAD must be positive or -1";
inline constexpr char kStreamBusyGroup[] = "BUSYGROUP Consumer Group name already exists";
inline constexpr char kStreamCountPositive[] = "ERR COUNT must be > 0";
inline std::string claim_bad_number(std::string_view what, std::string_view command) {
  return "ERR Invalid " + std::string(what) + " argument for " + std::string(command);
}
inline std::string claim_bad_option(std::string_view option) {
  return "ERR Unrecognized XCLAIM option '" + std::string(option) + "'";
}
inline std::string no_key_or_group(std::string_view key, std::string_view group,
                                   std::string_view tail = {}) {
  return "NOGROUP No such key '" + std::string(key) + "' or consumer group '" + std::string(group) +
         "'" + std::string(tail);
}
inline std::string no_consumer_group(std::string_view group, std::string_view key) {
  return "NOGROUP No such consumer group '" + std::string(group) + "' for key name '" +
         std::string(key) + "'";
}

// --- transactions (Redis's multi.c) ---------------------------------------------------
inline constexpr char kMultiNested[] = "ERR MULTI calls can not be nested";
inline constexpr char kExecWithoutMulti[] = "ERR EXEC without MULTI";
inline constexpr char kDiscardWithoutMulti[] = "ERR DISCARD without MULTI";
inline constexpr char kWatchInMulti[] = "ERR WATCH inside MULTI is not allowed";
inline constexpr char kNotInMulti[] = "ERR Command not allowed inside a transaction";
inline constexpr size_t kMaxWatchedKeys = 10000;  // per connection
inline std::string too_many_watched() {
  return "ERR too many watched keys (at most " + std::to_string(kMaxWatchedKeys) +
         " per connection; UNWATCH first)";
}
inline constexpr char kExecAbort[] = "EXECABORT Transaction discarded because of previous errors.";

// --- scripts (Redis's script_lua.c, eval.c and script.c wordings) -----------------------
inline constexpr char kNumkeysTooMany[] = "ERR Number of keys can't be greater than number of args";
inline constexpr char kNumkeysNegative[] = "ERR Number of keys can't be negative";
inline constexpr char kNoScript[] = "NOSCRIPT No matching script. Please use EVAL.";
inline constexpr char kNotBusy[] = "NOTBUSY No scripts in execution right now.";
inline constexpr char kLuaStackLimit[] = "ERR reached lua stack limit";
inline constexpr char kScriptArity[] = "ERR Wrong number of args calling Redis command from script";
inline constexpr char kScriptUnknownCommand[] = "ERR Unknown Redis command called from script";
inline constexpr char kScriptNotAllowed[] = "ERR This Redis command is not allowed from script";
inline constexpr char kScriptReadOnly[] =
    "ERR Write commands are not allowed from read-only scripts.";
inline constexpr char kScriptNonLocalKey[] =
    "ERR Script attempted to access a non local key in a cluster node";
inline constexpr char kScriptCrossSlot[] =
    "ERR Script attempted to access keys that do not hash to the same slot";
inline constexpr char kScriptNoState[] = "ERR could not start a Lua state";
inline constexpr char kShebangInvalid[] = "ERR Invalid script shebang";
inline constexpr char kShebangNoEngine[] = "ERR Invalid engine in script shebang";
inline constexpr char kScriptWriteFlagRo[] =
    "ERR Can not execute a script with write flag using *_ro command.";
inline constexpr char kScriptNoCluster[] =
    "ERR Can not run script on cluster, 'no-cluster' flag is set.";
inline std::string shebang_engine(std::string_view e) {
  return "ERR Unexpected engine in script shebang: " + std::string(e);
}
inline std::string shebang_flag(std::string_view f) {
  return "ERR Unexpected flag in script shebang: " + std::string(f);
}
inline std::string shebang_option(std::string_view o) {
  return "ERR Unknown lua shebang option: " + std::string(o);
}
inline constexpr char kScriptFailure[] = "ERR execution failure";
inline std::string script_compile_error(std::string_view why) {
  return "ERR Error compiling script (new function): " + std::string(why);
}
inline std::string script_run_error(std::string_view sha, std::string_view why) {
  return "ERR Error running script " + std::string(sha) + ", " + std::string(why);
}
// Floodgate's own: a script stops at its budget, with its writes undone.
inline std::string script_over_budget(std::string_view sha, int64_t budget_ms) {
  return "ERR script " + std::string(sha) + " ran past its budget of " + std::to_string(budget_ms) +
         " ms (script-time-limit) and was aborted; its writes were undone";
}
inline std::string script_out_of_memory(std::string_view sha, bool clients_cap) {
  return "ERR script " + std::string(sha) + " ran out of memory (" +
         (clients_cap ? "maxmemory-clients: the node's clients hold nearly all they may"
                      : "script-memory-limit") +
         ") and was aborted; its writes were undone";
}

// The redis.* API's own errors, raised in the script as Redis raises them (script_lua.c).
inline constexpr char kLuaCallOutsideScript[] =
    "redis.call/pcall can only be called inside a script invocation";
inline constexpr char kLuaNoArguments[] =
    "Please specify at least one argument for this redis lib call";
inline constexpr char kLuaArgumentTypes[] =
    "Lua redis lib command arguments must be strings or integers";
inline constexpr char kLuaArity[] = "wrong number of arguments";
inline constexpr char kLuaArityOrType[] = "wrong number or type of arguments";
inline constexpr char kLuaLogArity[] = "redis.log() requires two arguments or more.";
inline constexpr char kLuaLogLevelType[] = "First argument must be a number (log level).";
inline constexpr char kLuaLogLevel[] = "Invalid debug level.";
inline constexpr char kLuaSetrespOutsideScript[] =
    "redis.setresp can only be called inside a script invocation";
inline constexpr char kLuaSetrespArity[] = "redis.setresp() requires one argument.";
inline constexpr char kLuaRespVersion[] = "RESP version must be 2 or 3.";
inline constexpr char kLuaSetReplArity[] = "redis.set_repl() requires two arguments.";
inline constexpr char kLuaAclCheckOutsideScript[] =
    "redis.acl_check_cmd can only be called inside a script invocation";
inline constexpr char kLuaAclCheckUnknown[] = "Invalid command passed to redis.acl_check_cmd()";

// --- users (Redis's acl.c wordings) ----------------------------------------------------

inline constexpr char kNoPermKey[] =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
inline constexpr char kFunctionFlushOption[] = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option";
// Redis's addReplySubcommandSyntaxError.
inline std::string subcommand_syntax(std::string_view sub, std::string_view command) {
  return "ERR unknown subcommand or wrong number of arguments for '" +
         std::string(sub.substr(0, 128)) + "'. Try " + std::string(command) + " HELP.";
}
inline constexpr char kNoLfu[] =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust.";
inline constexpr char kLibraryNotFound[] = "ERR Library not found";
inline constexpr char kNoFunctions[] =
    "ERR Floodgate has no function libraries: load the code as a script (SCRIPT LOAD, EVALSHA)";
inline std::string unknown_argument(std::string_view a) {
  return "ERR Unknown argument " + std::string(a);
}
// A RESP2 connection with subscriptions sent another command.
inline std::string subscribe_context(std::string_view command) {
  return "ERR Can't execute '" + std::string(command) +
         "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
         "context";
}
inline constexpr char kNoPermChannel[] =
    "NOPERM this user has no permissions to access one of the channels used as arguments";
inline std::string no_perm_command(std::string_view command) {  // "fg.policy|set"
  return "NOPERM this user has no permissions to run the '" + std::string(command) + "' command";
}
// Floodgate's own: a forward the key's owner cannot check.
inline constexpr char kNoPermForwarded[] =
    "NOPERM this user has no permissions to run the forwarded command";
inline std::string unknown_user_at_owner(std::string_view user) {
  return "NOPERM the user '" + std::string(user) + "' is unknown to the key's owner";
}
inline constexpr char kUsernameChars[] = "ERR Usernames can't contain spaces or null characters";
inline std::string acl_modifier(std::string_view rule, std::string_view why) {
  return "ERR Error in ACL SETUSER modifier '" + std::string(rule) + "': " + std::string(why);
}
inline constexpr char kDefaultUserStays[] = "ERR The 'default' user cannot be removed";
inline std::string unknown_category(std::string_view name) {
  return "ERR Unknown category '" + std::string(name.substr(0, 128)) + "'";
}
inline std::string unknown_user(std::string_view name) {
  return "ERR User '" + std::string(name) + "' not found";
}
inline std::string command_not_found(std::string_view name) {
  return "ERR Command '" + std::string(name) + "' not found";
}
inline constexpr char kNoAclFile[] =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.";
inline constexpr char kGenpassBits[] =
    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive "
    "number up to 4096";
inline constexpr char kNoRandomBytes[] = "ERR no random bytes available";

// --- the server (Redis's server.c and rdb.c wordings) ---------------------------------

inline constexpr char kNoDir[] =
    "ERR this node has no dir: its state is not saved to disk (node/OPERATIONS.md, Persistence)";
inline constexpr char kSaveInProgress[] = "ERR Background save already in progress";
inline constexpr char kNoShutdownInProgress[] = "ERR No shutdown in progress.";
inline constexpr char kShutdownFailed[] = "ERR Errors trying to SHUTDOWN. Check logs.";
inline constexpr char kScriptFlushOption[] = "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
inline std::string script_cache_full(size_t scripts, size_t bytes) {
  return "ERR the script cache is full (" + std::to_string(scripts) + " scripts, " +
         std::to_string(bytes) + " bytes; see script-cache-max-scripts and script-cache-max-bytes)";
}
inline constexpr char kSettingsBookFull[] = "ERR the settings book is full";

// --- policies --------------------------------------------------------------------------
inline constexpr char kNoPolicyApplies[] =
    "ERR no policy applies to this key: name one, or map a key pattern to one with FG.POLICY "
    "MAP";
inline constexpr char kPoliciesReadOnly[] = "ERR policies are read-only on this node";
inline constexpr char kPatternSize[] = "ERR a key pattern is 1 to 1024 bytes";
inline constexpr char kPolicyNameSize[] = "ERR a policy name is 1 to 128 characters";
inline constexpr char kPolicyNameChars[] =
    "ERR a policy name holds only letters, digits, '-', '_', '.' and ':'";
inline constexpr char kPolicyNamedLikeKind[] = "ERR a policy may not be named like a limiter kind";
inline constexpr char kAdjustConcurrency[] =
    "ERR FG.ADJUST is for rate limits: a concurrency limit's leases are given back with "
    "FG.RELEASE";
inline constexpr char kShadowConcurrency[] =
    "ERR SHADOW is for rate limits: a concurrency limit would have to hand out leases past its "
    "limit";
inline constexpr char kPolicyNamedLikeWord[] =
    "ERR a policy may not be named COST, HOLDER or BOUND";
inline std::string unknown_policy(std::string_view name) {
  return "ERR unknown policy '" + std::string(name.substr(0, 128)) + "'";
}
inline std::string policy_in_use(std::string_view name, std::string_view glob) {
  return "ERR policy '" + std::string(name) + "' is mapped from pattern '" + std::string(glob) +
         "'; FG.POLICY UNMAP it first";
}
inline std::string book_full(size_t entries) {
  return "ERR the policy book is full (" + std::to_string(entries) + " entries)";
}

// --- state -----------------------------------------------------------------------------
inline constexpr char kWrongType[] =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr char kKeyLimit[] =
    "OOM command not allowed when the node holds max-keys keys (idle keys expire on their own)";
inline constexpr char kBusFull[] =
    "ERR the cluster bus already carries 16 MB of messages to other nodes: publish again "
    "shortly";
inline constexpr char kRandomReplyTooBig[] =
    "ERR the reply would be too large (repeated random picks are bounded by 64 MB and by what "
    "maxmemory-clients leaves): ask for fewer";
inline constexpr char kScriptCacheShare[] =
    "ERR this user holds its share of the script cache (user-share, user-limits)";
inline constexpr char kMaxSubscriptions[] =
    "ERR max number of subscriptions reached (max-subscriptions, or this user's share: "
    "user-share, user-limits)";
inline constexpr char kUserMaxClients[] =
    "ERR max number of clients reached for this user (user-share, user-limits)";
inline constexpr char kOomMaxmemory[] = "OOM command not allowed when used memory > 'maxmemory'.";
inline constexpr char kOomUserKeys[] =
    "OOM command not allowed when this user holds its share of the node's keys (user-share, "
    "user-limits)";
inline constexpr char kOomUserMemory[] =
    "OOM command not allowed when this user holds its share of the node's memory (user-share, "
    "user-limits)";

// --- connections -----------------------------------------------------------------------
inline constexpr char kNoAuth[] = "NOAUTH Authentication required.";
inline constexpr char kWrongPass[] =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr char kAuthNoPassword[] =
    "ERR AUTH <password> called without any password configured for the default user. Are "
    "you sure your configuration is correct?";
inline constexpr char kHelloNoAuth[] =
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
    "RESP protocol version at the same time";
inline constexpr char kNoProto[] = "NOPROTO unsupported protocol version";
inline constexpr char kProtoNotInteger[] = "ERR Protocol version is not an integer or out of range";
inline constexpr char kDbIndex[] = "ERR DB index is out of range";
inline constexpr char kMaxClients[] = "ERR max number of clients reached";
inline constexpr char kClientName[] =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline std::string hello_option(std::string_view opt) {
  return "ERR Syntax error in HELLO option '" + std::string(opt.substr(0, 64)) + "'";
}
inline std::string unrecognized_option(std::string_view opt) {
  return "ERR Unrecognized option '" + std::string(opt.substr(0, 64)) + "'";
}
inline std::string lib_field_chars(std::string_view field) {
  return "ERR " + std::string(field) + " cannot contain spaces, newlines or special characters.";
}

// --- protocol (the connection closes after these) --------------------------------------
inline constexpr char kMbulkCount[] = "ERR Protocol error: too big mbulk count string";
inline constexpr char kMbulkLength[] = "ERR Protocol error: invalid multibulk length";
inline constexpr char kBulkCount[] = "ERR Protocol error: too big bulk count string";
inline constexpr char kBulkLength[] = "ERR Protocol error: invalid bulk length";
inline constexpr char kInlineTooBig[] = "ERR Protocol error: too big inline request";
inline constexpr char kUnbalancedQuotes[] = "ERR Protocol error: unbalanced quotes in request";
inline constexpr char kQueryBufferLimit[] = "ERR Protocol error: query buffer limit exceeded";
inline constexpr char kFrameTooLarge[] = "ERR Protocol error: frame larger than 16 MiB";
inline constexpr char kMalformedFrame[] = "ERR Protocol error: malformed frame";
inline constexpr char kMalformedRequest[] = "ERR Protocol error: malformed request";
inline constexpr char kMalformedHello[] = "ERR Protocol error: malformed hello";
inline std::string expected_dollar(char got) {
  return std::string("ERR Protocol error: expected '$', got '") + got + "'";
}

// --- cluster ---------------------------------------------------------------------------
inline constexpr char kClusterDisabled[] = "ERR This instance has cluster support disabled";
inline constexpr char kClusterDown[] = "CLUSTERDOWN Hash slot not served";
inline constexpr char kNoQuorum[] = "CLUSTERDOWN The cluster is down";
inline constexpr char kNotReplicated[] =
    "TRYAGAIN no replica acknowledged the change in time; it may have been counted";
inline constexpr char kLeaseNotReplicated[] =
    "TRYAGAIN no replica acknowledged the lease in time; it was not granted";
inline constexpr char kSlotLost[] =
    "TRYAGAIN no copy of the key's slot state can be reached; the slot is served from empty "
    "state once cluster-empty-grace has passed";
inline constexpr char kSlotMoving[] =
    "TRYAGAIN the key's slot changed owner while the request was on its way; try again";
inline std::string moved(uint32_t slot, std::string_view host, int port) {
  return "MOVED " + std::to_string(slot) + " " + std::string(host) + ":" + std::to_string(port);
}
inline std::string owner_down(std::string_view node) {
  return "TRYAGAIN the key's owner (" + std::string(node) +
         ") is down; a replica takes over shortly";
}
inline std::string owner_silent(std::string_view node, std::string_view why) {
  return "TRYAGAIN the key's owner (" + std::string(node) + ") did not answer: " + std::string(why);
}
// A forward's answer that no peer frame could carry (it reaches the client after "error: ").
inline constexpr char kPeerFrameTooLarge[] = "response too large for a peer frame";
// A forward that names no user and is not its sender's own upkeep: from a node of the
// previous version, believed only with cluster-bus-legacy.
inline constexpr char kForwardWithoutUser[] =
    "NOPERM a forwarded request must name its user (a node of the previous version? see "
    "cluster-bus-legacy)";
inline std::string member_silent(std::string_view node, std::string_view why) {
  return "TRYAGAIN " + std::string(node) + " did not answer (" + std::string(why) +
         "): its leases of this holder were not reached";
}

}  // namespace fg::err
