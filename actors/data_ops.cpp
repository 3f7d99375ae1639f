// The Redis data commands on a shard's keys, with Redis's semantics, replies and error texts
// (its t_string.c, expire.c and db.c, read for every branch): arguments are checked in the
// order Redis checks them, so a bad argument and a key of the wrong type give the same
// error first. Limiter keys and data keys share the keyspace: a data command on a limiter
// key is -WRONGTYPE, except DEL, UNLINK, EXISTS, TYPE and the TTL commands, which work on
// every key.
#include <cfloat>
#include <climits>
#include <cmath>
#include <string>

#include "errors.hpp"
#include "scan_args.hpp"
#include "shard.hpp"
#include "string_value.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

namespace {

constexpr int64_t kNsPerMsD = 1'000'000;

// SET / GETEX options (Redis's OBJ_* flags).
enum : uint32_t {
  kNx = 1,
  kXx = 2,
  kEx = 4,
  kPx = 8,
  kKeepTtl = 16,
  kGet = 32,
  kExAt = 64,
  kPxAt = 128,
  kPersist = 256,
};

// Redis's parseExtendedStringArgumentsOrReply: `set` for SET's options, else GETEX's.
bool parse_string_options(const std::vector<std::string_view>& a, bool set, uint32_t& flags,
                          std::string_view& expire, bool& ms_unit, DataReply& r) {
  for (size_t j = set ? 3 : 2; j < a.size(); ++j) {
    const std::string_view o = a[j];
    const bool next = j + 1 < a.size();
    const bool timed = flags & (kEx | kPx | kExAt | kPxAt);
    if (set && iequals(o, "nx") && !(flags & kXx)) {
      flags |= kNx;
    } else if (set && iequals(o, "xx") && !(flags & kNx)) {
      flags |= kXx;
    } else if (set && iequals(o, "get")) {
      flags |= kGet;
    } else if (set && iequals(o, "keepttl") && !(flags & kPersist) && !timed) {
      flags |= kKeepTtl;
    } else if (!set && iequals(o, "persist") && !timed && !(flags & kKeepTtl)) {
      flags |= kPersist;
    } else if (iequals(o, "ex") && !(flags & (kKeepTtl | kPersist | kExAt | kPx | kPxAt)) && next) {
      flags |= kEx;
      expire = a[++j];
    } else if (iequals(o, "px") && !(flags & (kKeepTtl | kPersist | kEx | kExAt | kPxAt)) && next) {
      flags |= kPx;
      ms_unit = true;
      expire = a[++j];
    } else if (iequals(o, "exat") && !(flags & (kKeepTtl | kPersist | kEx | kPx | kPxAt)) && next) {
      flags |= kExAt;
      expire = a[++j];
    } else if (iequals(o, "pxat") && !(flags & (kKeepTtl | kPersist | kEx | kExAt | kPx)) && next) {
      flags |= kPxAt;
      ms_unit = true;
      expire = a[++j];
    } else {
      r.error(err::kSyntax);
      return false;
    }
  }
  return true;
}

// Redis's getExpireMillisecondsOrReply: the deadline an EX/PX/EXAT/PXAT argument names.
bool deadline_of(std::string_view arg, uint32_t flags, bool ms_unit, int64_t now_ms,
                 const char* command, DataReply& r, int64_t& out) {
  int64_t v;
  if (!parse_int(arg, v)) {
    r.error(err::kNotInteger);
    return false;
  }
  if (v <= 0 || (!ms_unit && v > LLONG_MAX / 1000)) {
    r.error(err::invalid_expire(command));
    return false;
  }
  if (!ms_unit) v *= 1000;
  if (flags & (kEx | kPx)) {
    if (v > LLONG_MAX - now_ms) {  // (Redis wraps and finds it negative: the same error)
      r.error(err::invalid_expire(command));
      return false;
    }
    v += now_ms;
  }
  out = v;
  return true;
}

// When a limiter is back at rest (and forgotten), in Unix nanoseconds.
int64_t rest_at_ns(Entry& e) {
  const auto rest = kind_row(e.kind).rest_at_ns;
  return rest ? rest(e) : 0;
}

bool is_string(const Entry* e) { return e->kind == Kind::kString; }

}  // namespace

// A SCAN cursor as Redis reads it (strtoull, to the end, no leading space, no overflow).
bool parse_unsigned_cursor(std::string_view s, uint64_t& out) {
  out = 0;
  if (s.empty()) return true;
  const bool negate = s[0] == '-';
  if (s[0] == '-' || s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  out = negate ? 0 - v : v;
  return true;
}

uint64_t scan_hash(std::string_view member) { return KeyTable::hash(member); }

// scanGenericCommand's options from word `from` on: MATCH pattern, COUNT n (at least 1; a
// hint, as there), and for SCAN only TYPE type. False, with the error replied, on any other.
bool parse_scan_options(const std::vector<std::string_view>& a, size_t from, bool with_type,
                        ScanArgs& out, DataReply& r) {
  for (size_t j = from; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (iequals(a[j], "count") && more) {
      int64_t n;
      if (!parse_int(a[++j], n)) {
        r.error(err::kNotInteger);
        return false;
      }
      if (n < 1) {
        r.error(err::kSyntax);
        return false;
      }
      out.count = static_cast<uint64_t>(n);
    } else if (iequals(a[j], "match") && more) {
      out.pattern = a[++j];
    } else if (with_type && iequals(a[j], "type") && more) {
      out.type = a[++j];
    } else {
      r.error(err::kSyntax);
      return false;
    }
  }
  return true;
}

int64_t Shard::expires_ms(const Entry& e) {
  const int64_t d = e.deadline_ms();
  if (!is_limiter(e.kind)) return d != 0 ? d : -1;
  const int64_t rest = rest_at_ns(const_cast<Entry&>(e));
  const int64_t rest_ms = rest / kNsPerMsD + (rest % kNsPerMsD > 0 ? 1 : 0);
  return d != 0 ? std::min(d, rest_ms) : rest_ms;
}

Entry* Shard::lookup(std::string_view key, uint64_t h, int64_t now_ns) {
  Entry* e = table_.find(key, h);
  if (e && expire(e, now_ns)) {
    if (t_key_events && past_deadline(e, now_ns))
      log_event(notify::kExpired, "expired", key, false);
    forget(key, h);
    mark_gone(key, false);
    return nullptr;
  }
  return e;
}

Entry* Shard::overwrite_string(ShardOp& op, std::string_view key, uint64_t h,
                               std::string_view value, bool keep_ttl, int64_t now_ns) {
  Entry* e = lookup(key, h, now_ns);
  int64_t kept = keep_ttl && e ? e->deadline_ms() : 0;
  const bool existed = e != nullptr;
  if (e && !is_string(e)) {
    forget(key, h);
    e = nullptr;
  }
  if (!e) {
    if (!room_for_key(op, now_ns)) return nullptr;
    e = existed ? table_.insert(key, h, Kind::kString, op.account)
                : insert_key(key, h, Kind::kString, op.account);
  }
  string_set(*e, value);
  if (kept != e->deadline_ms()) e = table_.set_deadline(key, h, kept);
  mark(e, key);
  return e;
}

void Shard::data(ShardOp& op, int64_t now_ns) {
  const DataCmdInfo& info = data_cmd_info(op.data);
  if (info.run == nullptr) return op.reply->error(err::kSyntax);  // (kNone: no row sends it)
  if (info.grows && !room_to_grow(op)) return;
  if (info.merge == Merge::kTogether && !holds_keys(op)) return;
  if (!key_events().active()) return (this->*info.run)(op, now_ns);
  // (keyspace notifications: what the command did, published once it is done; a script's
  // commands each publish their own)
  KeyEventLog log;
  KeyEventLog* outer = t_key_events;
  t_key_events = &log;
  (this->*info.run)(op, now_ns);
  t_key_events = outer;
  if (op.args) publish_events(log, info.name, *op.args);
}

void Shard::data_eval(ShardOp& op, int64_t now_ns) { run_script(op, nullptr, now_ns); }

// KEYS pattern, SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: the live keys this shard
// serves (a replica's copies are its owner's to list). KEYS answers them all (O(keys held),
// as Redis's); SCAN one step of the table's scan (KeyTable::scan: about COUNT keys looked
// at), answered [next cursor, keys] — the cursor this shard's, which the request core makes
// the node's (request_core.cpp). The pattern is read once (ScanFilter), so a key costs
// its own length whatever the pattern's.
void Shard::data_scan(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  ScanArgs args;
  uint64_t cursor = 0;
  const bool scan = op.data == DataCmd::kScan;
  if (scan) {
    if (!parse_unsigned_cursor(a[1], cursor)) return r.error(err::kInvalidCursor);
    if (!parse_scan_options(a, 2, true, args, r)) return;
  } else {
    args.pattern = a[1];
  }
  const ScanFilter matches(args.pattern, kMaxKeyLen);
  std::vector<Entry*> hits;
  auto look = [&](Entry* e) {
    if (idle(e, now_ns) || !owns(key_slot(e->key()))) return;
    if (!args.type.empty() && !iequals(kind_name(e->kind), args.type)) return;
    if (matches(e->key())) hits.push_back(e);
  };
  uint64_t next = 0;
  if (scan) {
    next = table_.scan(cursor, args.count, look);
    r.array(2);
    r.bulk(std::to_string(next));
  } else {
    table_.for_each(look);
  }
  r.array(static_cast<int64_t>(hits.size()));
  for (Entry* e : hits) r.bulk(e->key());
}

// RANDOMKEY's part on this shard (Merge::kPick): how many keys it holds, a draw, and one live
// key it serves, picked at random; as Redis, a few tries past expired keys (and, here, a
// replica's copies) before answering none.
void Shard::data_random_key(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  r.array(3);
  r.integer(static_cast<int64_t>(std::max<size_t>(table_.size(), 1)));
  r.integer(static_cast<int64_t>(next_random() >> 1));
  for (int tries = 0; tries < 100; ++tries) {
    Entry* e = table_.random_entry([this] { return next_random(); });
    if (!e) break;
    if (idle(e, now_ns) || !owns(key_slot(e->key()))) continue;
    return r.bulk(e->key());
  }
  r.null();
}

// GET, GETDEL, and one key of MGET or MSET (the core splits them by key).
void Shard::data_string(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  std::string buf;
  if (op.data == DataCmd::kMSet) {
    for (size_t j = 1; j + 1 < a.size(); j += 2) {
      const uint64_t h = j == 1 ? op.hash : KeyTable::hash(a[j]);
      if (!overwrite_string(op, a[j], h, a[j + 1], false, now_ns)) return;
    }
    return r.ok();
  }
  if (op.data == DataCmd::kMGet) {
    r.array(static_cast<int64_t>(a.size() - 1));
    for (size_t j = 1; j < a.size(); ++j) {
      Entry* e = lookup(a[j], j == 1 ? op.hash : KeyTable::hash(a[j]), now_ns);
      if (e && is_string(e)) {
        r.bulk(string_get(*e, buf));
      } else {
        r.null();
      }
    }
    return;
  }
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (!e) return r.null();
  if (!is_string(e)) {
    op.status = OpStatus::kWrongType;
    return;
  }
  r.bulk(string_get(*e, buf));
  if (op.data == DataCmd::kGetDel) {
    forget(op.key, op.hash);
    mark_gone(op.key);
  }
}

// SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT t | KEEPTTL], SETNX, SETEX, PSETEX.
void Shard::data_set(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const int64_t now_ms = now_ns / kNsPerMsD;
  uint32_t flags = 0;
  std::string_view expire, value = a[2];
  bool ms_unit = false;
  const char* name = data_cmd_info(op.data).name;
  switch (op.data) {
    case DataCmd::kSet:
      if (!parse_string_options(a, true, flags, expire, ms_unit, r)) return;
      break;
    case DataCmd::kSetNx:
      flags = kNx;
      break;
    case DataCmd::kSetEx:
    case DataCmd::kPSetEx:
      flags = op.data == DataCmd::kSetEx ? kEx : kPx;
      ms_unit = op.data == DataCmd::kPSetEx;
      expire = a[2];
      value = a[3];
      break;
    default:
      break;
  }
  int64_t deadline = 0;
  if (flags & (kEx | kPx | kExAt | kPxAt)) {
    if (!deadline_of(expire, flags, ms_unit, now_ms, name, r, deadline)) return;
  }
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (flags & kGet) {
    if (e && !is_string(e)) {
      op.status = OpStatus::kWrongType;
      return;
    }
    std::string buf;
    if (e) {
      r.bulk(string_get(*e, buf));
    } else {
      r.null();
    }
  }
  if (((flags & kNx) && e) || ((flags & kXx) && !e)) {
    if (flags & kGet) return;
    return op.data == DataCmd::kSetNx ? r.integer(0) : r.null();
  }
  e = overwrite_string(op, op.key, op.hash, value, flags & kKeepTtl, now_ns);
  if (!e) return r.clear();
  if (deadline != 0) table_.set_deadline(op.key, op.hash, deadline);
  if (flags & kGet) return;
  return op.data == DataCmd::kSetNx ? r.integer(1) : r.ok();
}

// GETEX key [EX|PX|EXAT|PXAT t | PERSIST].
void Shard::data_getex(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const int64_t now_ms = now_ns / kNsPerMsD;
  uint32_t flags = 0;
  std::string_view expire;
  bool ms_unit = false;
  if (!parse_string_options(a, false, flags, expire, ms_unit, r)) return;
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (!e) return r.null();
  if (!is_string(e)) {
    op.status = OpStatus::kWrongType;
    return;
  }
  int64_t deadline = 0;
  if ((flags & (kEx | kPx | kExAt | kPxAt)) &&
      !deadline_of(expire, flags, ms_unit, now_ms, "getex", r, deadline)) {
    return;
  }
  std::string buf;
  r.bulk(string_get(*e, buf));
  if ((flags & (kExAt | kPxAt)) && deadline <= now_ms) {
    forget(op.key, op.hash);
    mark_gone(op.key);
  } else if (deadline != 0) {
    mark(table_.set_deadline(op.key, op.hash, deadline), op.key);
  } else if ((flags & kPersist) && e->deadline_ms() != 0) {
    mark(table_.set_deadline(op.key, op.hash, 0), op.key);
  }
}

// INCR, INCRBY, DECR, DECRBY, INCRBYFLOAT: the key keeps its deadline.
void Shard::data_incr(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  int64_t by = 1;
  switch (op.data) {
    case DataCmd::kDecr:
      by = -1;
      break;
    case DataCmd::kIncrBy:
    case DataCmd::kDecrBy:
      if (!parse_int(a[2], by)) return r.error(err::kNotInteger);
      if (op.data == DataCmd::kDecrBy) {
        if (by == LLONG_MIN) return r.error(err::kDecrementOverflow);
        by = -by;
      }
      break;
    default:
      break;
  }
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (e && !is_string(e)) {
    op.status = OpStatus::kWrongType;
    return;
  }
  std::string buf;
  if (op.data == DataCmd::kIncrByFloat) {
    long double value = 0, incr;
    if (e) {
      if (string_is_int(*e)) {
        value = static_cast<long double>(e->state<StringState>().i);
      } else if (!parse_long_double(string_get(*e, buf), value)) {
        return r.error(err::kNotFloat);
      }
    }
    if (!parse_long_double(a[2], incr)) return r.error(err::kNotFloat);
    value += incr;
    if (std::isnan(value) || std::isinf(value)) return r.error(err::kNanOrInfinity);
    const std::string text = format_long_double(value);
    Entry* made = overwrite_string(op, op.key, op.hash, text, true, now_ns);
    if (!made) return;
    made->flags = static_cast<uint8_t>(made->flags | kEntryText);
    return r.bulk(text);
  }
  int64_t value = 0;
  if (e) {
    if (string_is_int(*e)) {
      value = e->state<StringState>().i;
    } else if (!parse_int(string_get(*e, buf), value)) {
      return r.error(err::kNotInteger);
    }
  }
  if ((by < 0 && value < 0 && by < LLONG_MIN - value) ||
      (by > 0 && value > 0 && by > LLONG_MAX - value)) {
    return r.error(err::kIncrOverflow);
  }
  value += by;
  if (!e) {  // (a new string entry holds the integer 0; no second lookup)
    if (!room_for_key(op, now_ns)) return;
    e = insert_key(op.key, op.hash, Kind::kString, op.account);
  }
  string_set_int(*e, value);
  mark(e, op.key);
  r.integer(value);
}

// INCREX key [BYINT n | BYFLOAT f] [LBOUND l] [UBOUND u] [SATURATE]
//   [EX s | PX ms | EXAT s | PXAT ms | PERSIST] [ENX] [NX | XX]
// Redis 8.8's bounded counter (with Valkey 9.2's NX and XX): [new value, increment applied].
// A result outside the bounds (LBOUND/UBOUND, else the type's limits) is not applied —
// [current value, 0], the key and its deadline untouched — unless SATURATE, which stops it
// at the bound. The deadline is set only when the increment is applied (ENX: only if the
// key has none); otherwise the key keeps its own, as INCR's.
void Shard::data_increx(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const int64_t now_ms = now_ns / kNsPerMsD;
  bool by_float = false, by_given = false, saturate = false, enx = false, nx = false, xx = false;
  std::string_view by = "1", lbound, ubound, expire;
  uint32_t flags = 0;
  bool ms_unit = false;
  for (size_t j = 2; j < a.size(); ++j) {
    const std::string_view o = a[j];
    const bool next = j + 1 < a.size();
    const bool timed = flags & (kEx | kPx | kExAt | kPxAt | kPersist);
    // (the options a fixed window sends first: EX and ENX)
    if (!timed && next &&
        (iequals(o, "ex") || iequals(o, "px") || iequals(o, "exat") || iequals(o, "pxat"))) {
      flags |= iequals(o, "ex") ? kEx : iequals(o, "px") ? kPx : iequals(o, "exat") ? kExAt : kPxAt;
      ms_unit = iequals(o, "px") || iequals(o, "pxat");
      expire = a[++j];
    } else if (iequals(o, "enx")) {
      enx = true;
    } else if ((iequals(o, "byint") || iequals(o, "byfloat")) && !by_given && next) {
      by_float = iequals(o, "byfloat");
      by_given = true;
      by = a[++j];
    } else if (iequals(o, "lbound") && lbound.data() == nullptr && next) {
      lbound = a[++j];
    } else if (iequals(o, "ubound") && ubound.data() == nullptr && next) {
      ubound = a[++j];
    } else if (iequals(o, "saturate")) {
      saturate = true;
    } else if (iequals(o, "nx") && !xx) {
      nx = true;
    } else if (iequals(o, "xx") && !nx) {
      xx = true;
    } else if (iequals(o, "persist") && !timed) {
      flags |= kPersist;
    } else {
      return r.error(err::kSyntax);
    }
  }
  // ENX qualifies a deadline being set: not alone, not with PERSIST.
  if (enx && !(flags & (kEx | kPx | kExAt | kPxAt))) return r.error(err::kSyntax);
  int64_t deadline = 0;
  if ((flags & (kEx | kPx | kExAt | kPxAt)) &&
      !deadline_of(expire, flags, ms_unit, now_ms, "increx", r, deadline)) {
    return;
  }
  // The increment and the bounds, in the increment's type.
  long double fby = 0, flo = -LDBL_MAX, fhi = LDBL_MAX;
  int64_t iby = 0, ilo = LLONG_MIN, ihi = LLONG_MAX;
  const char* not_number = by_float ? err::kNotFloat : err::kNotInteger;
  auto number = [&](std::string_view text, int64_t& i, long double& f) {
    return by_float ? parse_long_double(text, f) && !std::isnan(f) && !std::isinf(f)
                    : parse_int(text, i);
  };
  if (!number(by, iby, fby)) return r.error(not_number);
  if (lbound.data() && !number(lbound, ilo, flo)) return r.error(not_number);
  if (ubound.data() && !number(ubound, ihi, fhi)) return r.error(not_number);
  if (by_float ? flo > fhi : ilo > ihi) return r.error(err::kIncrExBounds);

  Entry* e = lookup(op.key, op.hash, now_ns);
  if (e && !is_string(e)) {
    op.status = OpStatus::kWrongType;
    return;
  }
  if ((nx && e) || (xx && !e)) return r.null();
  std::string buf;
  // The reply: the value the key holds after it, and what was added.
  auto answer_int = [&](int64_t value, int64_t applied) {
    r.array(2);
    r.integer(value);
    r.integer(applied);
  };
  auto answer_float = [&](long double value, long double applied) {
    r.array(2);
    r.double_text(format_long_double(value));
    r.double_text(format_long_double(applied));
  };
  bool applied = false;
  std::string stored;  // (BYFLOAT: the new value's text)
  int64_t inew = 0;
  if (by_float) {
    long double current = 0;
    if (e) {
      if (string_is_int(*e)) {
        current = static_cast<long double>(e->state<StringState>().i);
      } else if (!parse_long_double(string_get(*e, buf), current) || std::isnan(current) ||
                 std::isinf(current)) {
        return r.error(err::kNotFloat);
      }
    }
    long double next = current + fby;
    if (std::isnan(next)) return r.error(err::kNanOrInfinity);
    if (next < flo || next > fhi) {
      if (!saturate) return answer_float(current, 0);
      next = next < flo ? flo : fhi;
    }
    stored = format_long_double(next);
    e = overwrite_string(op, op.key, op.hash, stored, true, now_ns);
    if (!e) return;
    answer_float(next, next - current);
    applied = true;
  } else {
    int64_t current = 0;
    if (e) {
      if (string_is_int(*e)) {
        current = e->state<StringState>().i;
      } else if (!parse_int(string_get(*e, buf), current)) {
        return r.error(err::kNotInteger);
      }
    }
    const __int128 next = static_cast<__int128>(current) + iby;
    __int128 kept = next;
    if (next < ilo || next > ihi) {
      if (!saturate) return answer_int(current, 0);
      kept = next < ilo ? ilo : ihi;
    }
    const __int128 added = kept - current;
    if (added < LLONG_MIN || added > LLONG_MAX) {  // (only from a value far outside the bounds)
      if (!saturate) return answer_int(current, 0);
      return r.error(err::kIncrOverflow);
    }
    inew = static_cast<int64_t>(kept);
    if (!e) {
      if (!room_for_key(op, now_ns)) return;
      e = insert_key(op.key, op.hash, Kind::kString, op.account);
    }
    string_set_int(*e, inew);
    mark(e, op.key);
    answer_int(inew, static_cast<int64_t>(added));
    applied = true;
  }
  if (!applied) return;
  if (deadline != 0 && !(enx && e->deadline_ms() != 0)) {
    if ((flags & (kExAt | kPxAt)) && deadline <= now_ms) {  // (a moment already past)
      forget(op.key, op.hash);
      mark_gone(op.key);
    } else {
      mark(table_.set_deadline(op.key, op.hash, deadline), op.key);
    }
  } else if ((flags & kPersist) && e->deadline_ms() != 0) {
    mark(table_.set_deadline(op.key, op.hash, 0), op.key);
  }
}

// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key t [NX|XX|GT|LT].
void Shard::data_expire(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const int64_t now_ms = now_ns / kNsPerMsD;
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t j = 3; j < a.size(); ++j) {
    if (iequals(a[j], "nx")) {
      nx = true;
    } else if (iequals(a[j], "xx")) {
      xx = true;
    } else if (iequals(a[j], "gt")) {
      gt = true;
    } else if (iequals(a[j], "lt")) {
      lt = true;
    } else {
      return r.error(err::unsupported_option(a[j]));
    }
  }
  if (nx && (xx || gt || lt)) return r.error(err::kExpireNxOptions);
  if (gt && lt) return r.error(err::kExpireGtLt);
  int64_t when;
  if (!parse_int(a[2], when)) return r.error(err::kNotInteger);
  const bool seconds = op.data == DataCmd::kExpire || op.data == DataCmd::kExpireAt;
  const char* name = data_cmd_info(op.data).name;
  if (seconds) {
    if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) {
      return r.error(err::invalid_expire(name));
    }
    when *= 1000;
  }
  const int64_t base =
      op.data == DataCmd::kExpire || op.data == DataCmd::kPExpire ? now_ms : int64_t{0};
  if (when > LLONG_MAX - base) return r.error(err::invalid_expire(name));
  when += base;
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (!e) return r.integer(0);
  const int64_t current = expires_ms(*e);
  if ((nx && current != -1) || (xx && current == -1) ||
      (gt && (when <= current || current == -1)) || (lt && current != -1 && when >= current)) {
    return r.integer(0);
  }
  if (when <= now_ms) {
    forget(op.key, op.hash);
    mark_gone(op.key);
  } else {
    mark(table_.set_deadline(op.key, op.hash, when), op.key);
  }
  r.integer(1);
}

// DEL, UNLINK, EXISTS, TOUCH (one key each: the core splits them), TYPE, TTL, PTTL,
// EXPIRETIME, PEXPIRETIME, PERSIST.
void Shard::data_keys(ShardOp& op, int64_t now_ns) {
  DataReply& r = *op.reply;
  const int64_t now_ms = now_ns / kNsPerMsD;
  Entry* e = lookup(op.key, op.hash, now_ns);
  switch (op.data) {
    case DataCmd::kDel:
    case DataCmd::kUnlink:
      if (e) {
        forget(op.key, op.hash);
        mark_gone(op.key);
      }
      return r.integer(e ? 1 : 0);
    case DataCmd::kExists:
    case DataCmd::kTouch:  // (no LRU clock here to touch)
      return r.integer(e ? 1 : 0);
    case DataCmd::kType:
      return r.status(e ? kind_name(e->kind) : "none");
    case DataCmd::kPersist:
      if (!e || e->deadline_ms() == 0) return r.integer(0);
      mark(table_.set_deadline(op.key, op.hash, 0), op.key);
      return r.integer(1);
    default:
      break;
  }
  if (!e) return r.integer(-2);
  const int64_t expire = expires_ms(*e);
  if (expire == -1) return r.integer(-1);
  const bool absolute = op.data == DataCmd::kExpireTime || op.data == DataCmd::kPExpireTime;
  const bool ms = op.data == DataCmd::kPTtl || op.data == DataCmd::kPExpireTime;
  int64_t ttl = absolute ? expire : expire - now_ms;
  if (ttl < 0) ttl = 0;
  r.integer(ms ? ttl : (ttl + 500) / 1000);
}

Entry* Shard::typed(ShardOp& op, Kind kind, bool create, int64_t now_ns) {
  Entry* e = lookup(op.key, op.hash, now_ns);
  if (e && e->kind != kind) {
    op.status = OpStatus::kWrongType;
    return nullptr;
  }
  if (e || !create || !room_for_key(op, now_ns)) return e;
  return insert_key(op.key, op.hash, kind, op.account);
}

bool Shard::scan_key(ShardOp& op, Kind kind, int64_t now_ns, Entry*& e, uint64_t& cursor,
                     ScanArgs& args) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  if (!parse_unsigned_cursor(a[2], cursor)) {
    r.error(err::kInvalidCursor);
    return false;
  }
  e = typed(op, kind, false, now_ns);
  if (op.status != OpStatus::kOk) return false;
  if (!e) {  // (no such key: an empty page and the end, whatever the options say)
    r.array(2);
    r.bulk("0");
    r.array(0);
    return false;
  }
  return parse_scan_options(a, 3, false, args, r);
}

}  // namespace fg
