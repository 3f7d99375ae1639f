// Streams' consumer groups, as Redis 7.0's t_stream.c: XGROUP, XACK, XPENDING, XCLAIM,
// XAUTOCLAIM, and what XREADGROUP does to a group (Shard::stream_read reads its words). Each
// checks its arguments and the key in Redis's order, with its texts. A group's state is part
// of its stream's value (stream_value.hpp): it is replicated, handed off and saved with it.
// Times are the node's clock in Unix milliseconds, as Redis's mstime().
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "errors.hpp"
#include "shard.hpp"
#include "stream_reply.hpp"
#include "stream_value.hpp"
#include "words.hpp"

namespace fg {

namespace {

constexpr StreamId kMaxId{UINT64_MAX, UINT64_MAX};

int64_t ms_of(int64_t now_ns) { return now_ns / 1'000'000; }

// XCLAIM's and XAUTOCLAIM's consumer, at its first claim: seen now, made if new (and said so
// to keyspace notifications). True, for the caller's "seen".
bool claimer(StreamValue& s, StreamGroup& g, const std::string& owner, std::string_view key,
             int64_t now_ms) {
  bool made = false;
  s.consumer(g, owner, now_ms, true, &made);
  if (made) log_event(notify::kStream, "xgroup-createconsumer", key);
  return true;
}

// The claimed entries (deleted ones were taken out before), or their IDs.
void reply_claimed(DataReply& r, const StreamValue& s, const std::vector<StreamId>& claimed,
                   bool just_id) {
  r.array(static_cast<int64_t>(claimed.size()));
  for (const StreamId& id : claimed) {
    if (just_id) {
      r.bulk(id.text());
    } else {
      reply_entry(r, id, s.items.find(id)->second);
    }
  }
}

}  // namespace

// One stream's part of an XREADGROUP answer: with `history`, the consumer's own pending
// entries after `after` (one deleted since: its ID and a null), each delivered once more;
// else the entries after `after` (the group's last ID), which become the group's and, unless
// `noack`, pending with the consumer. At most `count` (0: all).
void reply_group_read(DataReply& r, StreamValue& s, StreamGroup& g, std::string_view key,
                      std::string_view consumer, StreamId after, bool history, int64_t count,
                      bool noack, int64_t now_ms) {
  bool made = false;
  StreamGroup::Consumer& c = s.consumer(g, consumer, now_ms, true, &made);
  if (made) log_event(notify::kStream, "xgroup-createconsumer", key);
  StreamId start = after;
  start.incr();
  auto room = [&](size_t n) { return count <= 0 || n < static_cast<size_t>(count); };
  if (history) {
    std::vector<StreamId> ids;
    for (auto it = c.pending.lower_bound(start); it != c.pending.end() && room(ids.size()); ++it)
      ids.push_back(*it);
    r.array(static_cast<int64_t>(ids.size()));
    for (const StreamId& id : ids) {
      auto item = s.items.find(id);
      if (item == s.items.end()) {
        r.array(2);
        r.bulk(id.text());
        r.null_array();
        continue;
      }
      reply_entry(r, id, item->second);
      if (auto p = g.pel.find(id); p != g.pel.end()) {
        p->second.delivered_ms = now_ms;
        ++p->second.deliveries;
      }
    }
    return;
  }
  std::vector<std::map<StreamId, StreamValue::Item>::const_iterator> hits;
  for (auto it = s.items.lower_bound(start); it != s.items.end() && room(hits.size()); ++it)
    hits.push_back(it);
  r.array(static_cast<int64_t>(hits.size()));
  const std::string owner(consumer);
  for (const auto& it : hits) {
    if (it->first > g.last_id) s.delivered(g, it->first);
    reply_entry(r, it->first, it->second);
    if (noack) continue;
    StreamGroup::Pending& p = s.own(g, it->first, owner, now_ms);
    p.delivered_ms = now_ms;  // (delivered again from the start: Redis resets the entry)
    p.deliveries = 1;
  }
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n] | SETID key group id|$
// [ENTRIESREAD n] | DESTROY key group | CREATECONSUMER key group consumer | DELCONSUMER key
// group consumer (HELP and the subcommands' arity: the door's).
void Shard::stream_group(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const std::string_view sub = a[1], key = a[2], name = a[3];
  const bool create = iequals(sub, "create"), setid = iequals(sub, "setid");
  bool mkstream = false;
  int64_t entries_read = -1;
  for (size_t i = 5; i < a.size();) {
    if (create && iequals(a[i], "mkstream")) {
      mkstream = true;
      ++i;
    } else if ((create || setid) && iequals(a[i], "entriesread") && i + 1 < a.size()) {
      if (!parse_int(a[i + 1], entries_read)) return r.error(err::kNotInteger);
      if (entries_read < 0 && entries_read != -1) return r.error(err::kStreamEntriesRead);
      i += 2;
    } else {
      return r.error(err::subcommand_syntax(sub, "XGROUP"));
    }
  }
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  StreamValue* s = e ? e->state<StreamValue*>() : nullptr;
  StreamGroup* g = nullptr;
  if (!mkstream) {
    if (!s) return r.error(err::kStreamGroupNeedsKey);
    g = s->group(name);
    if (!g && !create && !iequals(sub, "destroy"))
      return r.error(err::no_consumer_group(name, key));
  }
  const int64_t now_ms = ms_of(now_ns);
  if (create && a.size() <= 8) {
    StreamId id;
    if (a[4] == "$") {
      id = s ? s->last_id : StreamId{};
    } else if (!parse_stream_id(a[4], id, 0, true)) {
      return r.error(err::kStreamBadId);
    }
    if (s && s->group(name)) return r.error(err::kStreamBusyGroup);
    if (s && s->groups.size() >= kMaxStreamGroups)
      return r.error(err::collection_full("a stream", kMaxStreamGroups, "consumer groups"));
    if (!s) {
      e = typed(op, Kind::kStream, true, now_ns);
      if (!e) return;
      s = e->state<StreamValue*>();
    }
    s->add_group(name, id, entries_read);
    mark(e, op.key);
    log_event(notify::kStream, "xgroup-create", key);
    return r.ok();
  }
  if (setid && (a.size() == 5 || a.size() == 7)) {
    StreamId id;
    if (a[4] == "$") {
      id = s->last_id;
    } else if (!parse_stream_id(a[4], id, 0, false)) {
      return r.error(err::kStreamBadId);
    }
    g->last_id = id;
    g->entries_read = entries_read;
    mark(e, op.key);
    log_event(notify::kStream, "xgroup-setid", key);
    return r.ok();
  }
  if (iequals(sub, "destroy") && a.size() == 4) {
    if (!g) return r.integer(0);
    s->drop_group(name);
    mark(e, op.key);  // (a reader blocked on the group is woken, and told it is gone)
    log_event(notify::kStream, "xgroup-destroy", key);
    return r.integer(1);
  }
  if (iequals(sub, "createconsumer") && a.size() == 5) {
    if (g->consumers.count(std::string(a[4]))) return r.integer(0);
    if (g->consumers.size() >= kMaxStreamConsumers)
      return r.error(err::collection_full("a consumer group", kMaxStreamConsumers, "consumers"));
    s->consumer(*g, a[4], now_ms);
    mark(e, op.key);
    log_event(notify::kStream, "xgroup-createconsumer", key);
    return r.integer(1);
  }
  if (iequals(sub, "delconsumer") && a.size() == 5) {
    if (!g->consumers.count(std::string(a[4]))) return r.integer(0);
    const int64_t pending = s->drop_consumer(*g, a[4]);
    mark(e, op.key);
    log_event(notify::kStream, "xgroup-delconsumer", key);
    return r.integer(pending);
  }
  return r.error(err::subcommand_syntax(sub, "XGROUP"));
}

// XACK key group id ...: how many of the IDs were pending in the group (no key or group: 0;
// one word not an ID: the error, nothing acknowledged).
void Shard::stream_ack(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  StreamValue* s = e ? e->state<StreamValue*>() : nullptr;
  StreamGroup* g = s ? s->group(a[2]) : nullptr;
  if (!g) return r.integer(0);
  std::vector<StreamId> ids(a.size() - 3);
  for (size_t j = 3; j < a.size(); ++j)
    if (!parse_stream_id(a[j], ids[j - 3], 0, true)) return r.error(err::kStreamBadId);
  int64_t acked = 0;
  for (const StreamId& id : ids) {
    auto it = g->pel.find(id);
    if (it == g->pel.end()) continue;
    s->ack(*g, it);
    ++acked;
  }
  if (acked) mark(e, op.key);
  r.integer(acked);
}

// XPENDING key group: [count, first ID, last ID, [[consumer, count] ...]]; XPENDING key group
// [IDLE ms] start end count [consumer]: [[id, consumer, ms since delivered, deliveries] ...].
void Shard::stream_pending(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const bool summary = a.size() == 3;
  if (!summary && (a.size() < 6 || a.size() > 9)) return r.error(err::kSyntax);
  StreamId start, end;
  int64_t count = 0, min_idle = 0;
  std::string_view consumer;
  bool by_consumer = false;
  if (!summary) {
    size_t at = 3;
    if (iequals(a[3], "idle")) {
      if (!parse_int(a[4], min_idle)) return r.error(err::kNotInteger);
      if (a.size() < 8) return r.error(err::kSyntax);
      at += 2;
    }
    if (!parse_int(a[at + 2], count)) return r.error(err::kNotInteger);
    if (count < 0) count = 0;
    bool open;
    if (!parse_interval_id(a[at], 0, start, open)) return r.error(err::kStreamBadId);
    if (open && !start.incr()) return r.error(err::kStreamStartInterval);
    if (!parse_interval_id(a[at + 1], UINT64_MAX, end, open)) return r.error(err::kStreamBadId);
    if (open && !end.decr()) return r.error(err::kStreamEndInterval);
    if (at + 3 < a.size()) {
      consumer = a[at + 3];
      by_consumer = true;
    }
  }
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  StreamValue* s = e ? e->state<StreamValue*>() : nullptr;
  const StreamGroup* g = s ? s->group(a[2]) : nullptr;
  if (!g) return r.error(err::no_key_or_group(a[1], a[2]));
  if (summary) {
    r.array(4);
    r.integer(static_cast<int64_t>(g->pel.size()));
    if (g->pel.empty()) {
      r.null();
      r.null();
      return r.null_array();
    }
    r.bulk(g->pel.begin()->first.text());
    r.bulk(g->pel.rbegin()->first.text());
    size_t owners = 0;
    for (const auto& [_, c] : g->consumers) owners += c.pending.empty() ? 0 : 1;
    r.array(static_cast<int64_t>(owners));
    for (const auto& [name, c] : g->consumers) {
      if (c.pending.empty()) continue;
      r.array(2);
      r.bulk(name);
      r.bulk(std::to_string(c.pending.size()));
    }
    return;
  }
  const std::set<StreamId>* only = nullptr;
  if (by_consumer) {
    auto c = g->consumers.find(std::string(consumer));
    if (c == g->consumers.end()) return r.array(0);
    only = &c->second.pending;
  }
  const int64_t now_ms = ms_of(now_ns);
  std::vector<std::map<StreamId, StreamGroup::Pending>::const_iterator> hits;
  auto take = [&](std::map<StreamId, StreamGroup::Pending>::const_iterator p) {
    if (min_idle && now_ms - p->second.delivered_ms < min_idle) return;
    hits.push_back(p);
    --count;
  };
  if (only) {
    for (auto it = only->lower_bound(start); count > 0 && it != only->end() && *it <= end; ++it)
      if (auto p = g->pel.find(*it); p != g->pel.end()) take(p);
  } else {
    for (auto p = g->pel.lower_bound(start); count > 0 && p != g->pel.end() && p->first <= end; ++p)
      take(p);
  }
  r.array(static_cast<int64_t>(hits.size()));
  for (const auto& p : hits) {
    r.array(4);
    r.bulk(p->first.text());
    r.bulk(p->second.consumer);
    r.integer(std::max<int64_t>(0, now_ms - p->second.delivered_ms));
    r.integer(static_cast<int64_t>(p->second.deliveries));
  }
}

// XCLAIM key group consumer min-idle-time id ... [IDLE ms] [TIME ms] [RETRYCOUNT n] [FORCE]
// [JUSTID] [LASTID id]: the pending entries idle at least that long become the consumer's
// (an ID whose entry was deleted leaves the group); the entries (or their IDs) it now has.
void Shard::stream_claim(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  StreamValue* s = e ? e->state<StreamValue*>() : nullptr;
  StreamGroup* g = s ? s->group(a[2]) : nullptr;
  if (!g) return r.error(err::no_key_or_group(a[1], a[2]));
  int64_t min_idle;
  if (!parse_int(a[4], min_idle)) return r.error(err::claim_bad_number("min-idle-time", "XCLAIM"));
  if (min_idle < 0) min_idle = 0;
  std::vector<StreamId> ids;
  size_t j = 5;
  for (StreamId id; j < a.size() && parse_stream_id(a[j], id, 0, true); ++j) ids.push_back(id);
  const int64_t now_ms = ms_of(now_ns);
  int64_t retries = -1, delivered = -1;
  bool force = false, just_id = false;
  StreamId last_id;
  for (; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    const std::string_view opt = a[j];
    int64_t v;
    if (iequals(opt, "force")) {
      force = true;
    } else if (iequals(opt, "justid")) {
      just_id = true;
    } else if (iequals(opt, "idle") && more) {
      if (!parse_int(a[++j], v)) return r.error(err::claim_bad_number("IDLE option", "XCLAIM"));
      delivered = now_ms - v;
    } else if (iequals(opt, "time") && more) {
      if (!parse_int(a[++j], v)) return r.error(err::claim_bad_number("TIME option", "XCLAIM"));
      delivered = v;
    } else if (iequals(opt, "retrycount") && more) {
      if (!parse_int(a[++j], retries))
        return r.error(err::claim_bad_number("RETRYCOUNT option", "XCLAIM"));
    } else if (iequals(opt, "lastid") && more) {
      if (!parse_stream_id(a[++j], last_id, 0, true)) return r.error(err::kStreamBadId);
    } else {
      return r.error(err::claim_bad_option(opt));
    }
  }
  bool changed = false;
  if (last_id > g->last_id) {
    g->last_id = last_id;
    changed = true;
  }
  if (delivered < 0 || delivered > now_ms) delivered = now_ms;
  const std::string owner(a[3]);
  const bool known = g->consumers.count(owner) > 0;
  if (!known && g->consumers.size() >= kMaxStreamConsumers)
    return r.error(err::collection_full("a consumer group", kMaxStreamConsumers, "consumers"));
  std::vector<StreamId> claimed;
  bool seen = false;
  for (const StreamId& id : ids) {
    auto p = g->pel.find(id);
    if (!s->items.count(id)) {  // (gone from the stream: gone from the group too)
      if (p != g->pel.end()) {
        s->ack(*g, p);
        changed = true;
      }
      continue;
    }
    const bool fresh = p == g->pel.end();
    if (fresh && !force) continue;
    if (!fresh && min_idle && now_ms - p->second.delivered_ms < min_idle) continue;
    if (!seen) seen = claimer(*s, *g, owner, a[1], now_ms);
    StreamGroup::Pending& pending = s->own(*g, id, owner, now_ms);
    pending.delivered_ms = delivered;
    if (retries >= 0) {
      pending.deliveries = static_cast<uint64_t>(retries);
    } else if (!just_id) {
      ++pending.deliveries;
    }
    claimed.push_back(id);
    changed = true;
  }
  if (changed || seen) mark(e, op.key);
  reply_claimed(r, *s, claimed, just_id);
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]: XCLAIM over the
// group's pending entries from `start`, at most COUNT (100) of them and ten times as many
// looked at: [the next start (0-0: the end), [entries or IDs], [IDs gone from the stream]].
void Shard::stream_autoclaim(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  int64_t min_idle;
  if (!parse_int(a[4], min_idle))
    return r.error(err::claim_bad_number("min-idle-time", "XAUTOCLAIM"));
  if (min_idle < 0) min_idle = 0;
  StreamId start;
  bool open;
  if (!parse_interval_id(a[5], 0, start, open)) return r.error(err::kStreamBadId);
  if (open && !start.incr()) return r.error(err::kStreamStartInterval);
  int64_t count = 100;
  bool just_id = false;
  for (size_t j = 6; j < a.size(); ++j) {
    if (iequals(a[j], "count") && j + 1 < a.size()) {
      constexpr int64_t kMost = INT64_MAX / 16;  // (Redis's: its transient array's bound)
      if (!parse_int(a[j + 1], count) || count < 1 || count > kMost)
        return r.error(err::kStreamCountPositive);
      ++j;
    } else if (iequals(a[j], "justid")) {
      just_id = true;
    } else {
      return r.error(err::kSyntax);
    }
  }
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  StreamValue* s = e ? e->state<StreamValue*>() : nullptr;
  StreamGroup* g = s ? s->group(a[2]) : nullptr;
  if (!g) return r.error(err::no_key_or_group(a[1], a[2]));
  const std::string owner(a[3]);
  if (!g->consumers.count(owner) && g->consumers.size() >= kMaxStreamConsumers)
    return r.error(err::collection_full("a consumer group", kMaxStreamConsumers, "consumers"));
  const int64_t now_ms = ms_of(now_ns);
  int64_t attempts = count * 10;
  std::vector<StreamId> claimed, deleted;
  bool seen = false;
  auto it = g->pel.lower_bound(start);
  while (attempts-- > 0 && count > 0 && it != g->pel.end()) {
    const StreamId id = it->first;
    if (!s->items.count(id)) {
      it = s->ack(*g, it);
      deleted.push_back(id);
      --count;
      continue;
    }
    if (min_idle && now_ms - it->second.delivered_ms < min_idle) {
      ++it;
      continue;
    }
    if (!seen) seen = claimer(*s, *g, owner, a[1], now_ms);
    StreamGroup::Pending& p = s->own(*g, id, owner, now_ms);
    p.delivered_ms = now_ms;
    if (!just_id) ++p.deliveries;
    claimed.push_back(id);
    --count;
    ++it;
  }
  if (seen || !deleted.empty()) mark(e, op.key);
  r.array(3);
  r.bulk(it == g->pel.end() ? StreamId{}.text() : it->first.text());
  reply_claimed(r, *s, claimed, just_id);
  r.array(static_cast<int64_t>(deleted.size()));
  for (const StreamId& id : deleted) r.bulk(id.text());
}

}  // namespace fg
