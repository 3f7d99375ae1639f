// Keyspace notifications: the flags' letters, publishing, and each data command's event as
// Redis 7.0's commands name it (t_string.c, t_list.c, t_set.c, t_zset.c, t_hash.c,
// t_stream.c, expire.c, db.c, bitops.c).
#include "key_events.hpp"

#include <unordered_map>

#include "words.hpp"

namespace fg {

KeyEvents g_key_events;

namespace {

struct Letter {
  char c;
  uint32_t flags;
};
constexpr Letter kLetters[] = {
    {'g', notify::kGeneric}, {'$', notify::kString},  {'l', notify::kList},
    {'s', notify::kSet},     {'h', notify::kHash},    {'z', notify::kZSet},
    {'x', notify::kExpired}, {'e', notify::kEvicted}, {'t', notify::kStream},
    {'d', notify::kModule},  {'n', notify::kNew},
};

// What a command's changed keys publish when it names no event itself. `gone`: a key it
// emptied or deleted publishes the event and then "del" (kThenDel), only "del" (kDelOnly:
// DEL, the STOREs whose result was empty, an EXPIRE in the past), or nothing.
enum class Gone : uint8_t { kThenDel, kDelOnly, kNothing };
struct Row {
  uint32_t cls;
  const char* event;
  Gone gone = Gone::kThenDel;
};

const std::unordered_map<std::string_view, Row>& rows() {
  using namespace notify;
  static const std::unordered_map<std::string_view, Row> m = {
      // strings
      {"set", {kString, "set"}},
      {"setnx", {kString, "set"}},
      {"setex", {kString, "set"}},
      {"psetex", {kString, "set"}},
      {"getset", {kString, "set"}},
      {"mset", {kString, "set"}},
      {"msetnx", {kString, "set"}},
      {"setrange", {kString, "setrange"}},
      {"append", {kString, "append"}},
      {"incr", {kString, "incrby"}},
      {"incrby", {kString, "incrby"}},
      {"decr", {kString, "incrby"}},  // (Redis names all four so)
      {"decrby", {kString, "incrby"}},
      {"incrbyfloat", {kString, "incrbyfloat"}},
      {"getdel", {kGeneric, "del", Gone::kDelOnly}},
      {"getex", {kGeneric, "expire", Gone::kDelOnly}},
      {"setbit", {kString, "setbit"}},
      {"bitfield", {kString, "setbit"}},
      {"bitop", {kString, "set", Gone::kDelOnly}},
      // keys
      {"del", {kGeneric, "del", Gone::kDelOnly}},
      {"unlink", {kGeneric, "del", Gone::kDelOnly}},
      {"expire", {kGeneric, "expire", Gone::kDelOnly}},
      {"pexpire", {kGeneric, "expire", Gone::kDelOnly}},
      {"expireat", {kGeneric, "expire", Gone::kDelOnly}},
      {"pexpireat", {kGeneric, "expire", Gone::kDelOnly}},
      {"persist", {kGeneric, "persist"}},
      {"copy", {kGeneric, "copy_to"}},
      // lists
      {"lpush", {kList, "lpush"}},
      {"lpushx", {kList, "lpush"}},
      {"rpush", {kList, "rpush"}},
      {"rpushx", {kList, "rpush"}},
      {"lpop", {kList, "lpop"}},
      {"rpop", {kList, "rpop"}},
      {"blpop", {kList, "lpop"}},
      {"brpop", {kList, "rpop"}},
      {"lmpop", {kList, "lpop"}},  // (or rpop: its direction)
      {"blmpop", {kList, "lpop"}},
      {"linsert", {kList, "linsert"}},
      {"lset", {kList, "lset"}},
      {"lrem", {kList, "lrem"}},
      {"ltrim", {kList, "ltrim"}},
      // sets
      {"sadd", {kSet, "sadd"}},
      {"srem", {kSet, "srem"}},
      {"spop", {kSet, "spop"}},
      {"sinterstore", {kSet, "sinterstore", Gone::kDelOnly}},
      {"sunionstore", {kSet, "sunionstore", Gone::kDelOnly}},
      {"sdiffstore", {kSet, "sdiffstore", Gone::kDelOnly}},
      // sorted sets
      {"zadd", {kZSet, "zadd"}},  // (zincr with INCR)
      {"zincrby", {kZSet, "zincr"}},
      {"zrem", {kZSet, "zrem"}},
      {"zremrangebyscore", {kZSet, "zremrangebyscore"}},
      {"zremrangebyrank", {kZSet, "zremrangebyrank"}},
      {"zremrangebylex", {kZSet, "zremrangebylex"}},
      {"zpopmin", {kZSet, "zpopmin"}},
      {"zpopmax", {kZSet, "zpopmax"}},
      {"bzpopmin", {kZSet, "zpopmin"}},
      {"bzpopmax", {kZSet, "zpopmax"}},
      {"zmpop", {kZSet, "zpopmin"}},  // (or zpopmax: its MIN|MAX)
      {"bzmpop", {kZSet, "zpopmin"}},
      {"zunionstore", {kZSet, "zunionstore", Gone::kDelOnly}},
      {"zinterstore", {kZSet, "zinterstore", Gone::kDelOnly}},
      {"zdiffstore", {kZSet, "zdiffstore", Gone::kDelOnly}},
      {"zrangestore", {kZSet, "zrangestore", Gone::kDelOnly}},
      // hashes
      {"hset", {kHash, "hset"}},
      {"hmset", {kHash, "hset"}},
      {"hsetnx", {kHash, "hset"}},
      {"hincrby", {kHash, "hincrby"}},
      {"hincrbyfloat", {kHash, "hincrbyfloat"}},
      {"hdel", {kHash, "hdel"}},
      // streams (XADD, XGROUP, XREADGROUP, XCLAIM, XAUTOCLAIM name theirs)
      {"xtrim", {kStream, "xtrim"}},
      {"xdel", {kStream, "xdel"}},
      {"xsetid", {kStream, "xsetid"}},
  };
  return m;
}

// The word after a command's keys, for those whose event depends on it: LMPOP's LEFT|RIGHT,
// ZMPOP's MIN|MAX ([B]LMPOP [timeout] numkeys key ... dir).
std::string_view after_counted_keys(const std::vector<std::string_view>& words, size_t count_at) {
  int64_t n = 0;
  if (words.size() <= count_at || !parse_int(words[count_at], n) || n < 0) return {};
  const size_t at = count_at + 1 + static_cast<size_t>(n);
  return at < words.size() ? words[at] : std::string_view();
}

bool has_word(const std::vector<std::string_view>& words, size_t from,
              std::initializer_list<std::string_view> any) {
  for (size_t i = from; i < words.size(); ++i)
    for (std::string_view w : any)
      if (iequals(words[i], w)) return true;
  return false;
}

}  // namespace

bool parse_notify_flags(std::string_view letters, uint32_t& flags) {
  uint32_t f = 0;
  for (char c : letters) {
    if (c == 'A') {
      f |= notify::kAll;
    } else if (c == 'K') {
      f |= notify::kKeyspace;
    } else if (c == 'E') {
      f |= notify::kKeyevent;
    } else if (c == 'm') {
      f |= notify::kKeyMiss;
    } else {
      bool known = false;
      for (const Letter& l : kLetters) {
        if (l.c == c) {
          f |= l.flags;
          known = true;
        }
      }
      if (!known) return false;
    }
  }
  flags = f;
  return true;
}

std::string notify_flags_text(uint32_t flags) {
  std::string out;
  if ((flags & notify::kAll) == notify::kAll) {
    out += 'A';
    if (flags & notify::kNew) out += 'n';
  } else {
    for (const Letter& l : kLetters)
      if (flags & l.flags) out += l.c;
  }
  if (flags & notify::kKeyspace) out += 'K';
  if (flags & notify::kKeyevent) out += 'E';
  if (flags & notify::kKeyMiss) out += 'm';
  return out;
}

void KeyEvents::emit(uint32_t cls, std::string_view event, std::string_view key) {
  const uint32_t f = flags();
  if (!(f & cls) || !publish_) return;
  auto send = [&](const std::string& channel, std::string_view message) {
    if (publish_(channel, message)) {
      published.fetch_add(1, std::memory_order_relaxed);
    } else {
      dropped.fetch_add(1, std::memory_order_relaxed);
    }
  };
  if (f & notify::kKeyspace) send("__keyspace@0__:" + std::string(key), event);
  if (f & notify::kKeyevent) send("__keyevent@0__:" + std::string(event), key);
}

void publish_events(const KeyEventLog& log, std::string_view command,
                    const std::vector<std::string_view>& words) {
  KeyEvents& events = key_events();
  const auto& table = rows();
  const auto found = table.find(command);
  const Row* row = found == table.end() ? nullptr : &found->second;
  Row r = row ? *row : Row{0, nullptr, Gone::kNothing};
  // (the events that hang on a command's words)
  std::string_view also;  // a second event on each changed key: SET's EX, SETEX's
  if (command == "lmpop" || command == "blmpop") {
    if (iequals(after_counted_keys(words, command == "lmpop" ? 1 : 2), "right")) r.event = "rpop";
  } else if (command == "zmpop" || command == "bzmpop") {
    if (iequals(after_counted_keys(words, command == "zmpop" ? 1 : 2), "max")) r.event = "zpopmax";
  } else if (command == "zadd") {
    if (has_word(words, 2, {"incr"})) r.event = "zincr";
  } else if (command == "set") {
    if (has_word(words, 3, {"ex", "px", "exat", "pxat"})) also = "expire";
  } else if (command == "setex" || command == "psetex") {
    also = "expire";
  } else if (command == "getex") {
    if (has_word(words, 2, {"persist"})) {
      r.event = "persist";
    } else if (!has_word(words, 2, {"ex", "px", "exat", "pxat"})) {
      r.event = nullptr;
    }
  }
  for (const KeyEventLog::Item& i : log.items) {
    if (i.cls != 0) {
      events.emit(i.cls, i.event, i.key);
      continue;
    }
    if (log.named || !row) continue;
    if (!i.gone) {
      if (r.event) events.emit(r.cls, r.event, i.key);
      if (!also.empty()) events.emit(notify::kGeneric, also, i.key);
    } else if (r.gone == Gone::kThenDel) {
      if (r.event) events.emit(r.cls, r.event, i.key);
      events.emit(notify::kGeneric, "del", i.key);
    } else if (r.gone == Gone::kDelOnly) {
      events.emit(notify::kGeneric, "del", i.key);
    }
  }
}

}  // namespace fg
