// Streams, as Redis 7.0's t_stream.c: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD
// XINFO, each checking its arguments and the key in Redis's order, with its texts. An
// emptied stream stays a key (as Redis keeps it); an approximate trim (~) removes whole
// nodes of stream-node-max-entries entries, as Redis removes whole listpacks.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "encoding_thresholds.hpp"
#include "entry_snapshot.hpp"
#include "errors.hpp"
#include "shard.hpp"
#include "stream_reply.hpp"
#include "stream_value.hpp"
#include "value_kinds.hpp"
#include "words.hpp"

namespace fg {

namespace {

// XADD's and XTRIM's options (streamParseAddOrTrimArgsOrReply).
struct TrimArgs {
  enum { kNone, kMaxLen, kMinId } strategy = kNone;
  bool approx = false;
  int64_t maxlen = 0;
  StreamId minid;
  int64_t limit = 0;
  bool nomkstream = false;
  bool id_given = false, seq_given = true;
  StreamId id;
  size_t id_at = 0;  // XADD: the ID's word
};

// Reads the options from word 2 on; for XADD up to its ID. An error text, or empty.
std::string parse_trim(const std::vector<std::string_view>& a, bool xadd, TrimArgs& t) {
  bool limit_given = false;
  size_t i = 2;
  for (; i < a.size(); ++i) {
    const size_t more = a.size() - 1 - i;
    const std::string_view opt = a[i];
    if (xadd && opt == "*") break;
    if ((iequals(opt, "maxlen") || iequals(opt, "minid")) && more) {
      if (t.strategy != TrimArgs::kNone) return err::kStreamMaxlenMinid;
      const bool maxlen = iequals(opt, "maxlen");
      t.approx = false;
      if (more >= 2 && a[i + 1] == "~") {
        t.approx = true;
        ++i;
      } else if (more >= 2 && a[i + 1] == "=") {
        ++i;
      }
      if (maxlen) {
        if (!parse_int(a[i + 1], t.maxlen)) return err::kNotInteger;
        if (t.maxlen < 0) return err::kStreamMaxlenNegative;
        t.strategy = TrimArgs::kMaxLen;
      } else {
        if (!parse_stream_id(a[i + 1], t.minid, 0, true)) return err::kStreamBadId;
        t.strategy = TrimArgs::kMinId;
      }
      ++i;
    } else if (iequals(opt, "limit") && more) {
      if (!parse_int(a[i + 1], t.limit)) return err::kNotInteger;
      if (t.limit < 0) return err::kStreamLimitNegative;
      limit_given = true;
      ++i;
    } else if (xadd && iequals(opt, "nomkstream")) {
      t.nomkstream = true;
    } else if (xadd) {
      if (!parse_stream_id(opt, t.id, 0, true, &t.seq_given)) return err::kStreamBadId;
      t.id_given = true;
      break;
    } else {
      return err::kSyntax;
    }
  }
  t.id_at = i;
  if (t.limit && t.strategy == TrimArgs::kNone) return err::kStreamLimitWithoutTrim;
  if (!xadd && t.strategy == TrimArgs::kNone) return err::kStreamTrimNeedsStrategy;
  if (limit_given) {
    if (!t.approx) return err::kStreamLimitWithoutApprox;
  } else if (t.approx) {  // (Redis's cap on an approximate trim's work: 100 nodes)
    t.limit = 100 * encoding_thresholds().stream_node_entries.load();
    if (t.limit <= 0) t.limit = 10000;
    if (t.limit > 1000000) t.limit = 1000000;
  }
  return {};
}

int64_t run_trim(StreamValue& s, const TrimArgs& t) {
  if (t.strategy == TrimArgs::kNone) return 0;
  return s.trim(t.strategy == TrimArgs::kMaxLen, static_cast<uint64_t>(t.maxlen), t.minid, t.approx,
                t.approx ? t.limit : 0);
}

int64_t node_entries() { return encoding_thresholds().stream_node_entries.load(); }
int64_t node_bytes() { return encoding_thresholds().stream_node_bytes.load(); }

}  // namespace

void Shard::data_stream(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const DataCmd c = op.data;
  auto existing = [&](Entry*& e) -> StreamValue* {
    e = typed(op, Kind::kStream, false, now_ns);
    return e ? e->state<StreamValue*>() : nullptr;
  };
  Entry* e = nullptr;
  switch (c) {
    case DataCmd::kXAdd: {
      TrimArgs t;
      if (std::string why = parse_trim(a, true, t); !why.empty()) return r.error(why);
      const size_t fields = t.id_at + 1;
      if (fields > a.size() || a.size() - fields < 2 || (a.size() - fields) % 2 == 1)
        return r.error(err::wrong_arity("xadd"));
      if (t.id_given && t.seq_given && t.id == StreamId{}) return r.error(err::kStreamIdZero);
      StreamValue* s = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!s && t.nomkstream) return r.null();
      if (s && s->last_id.is_max()) return r.error(err::kStreamExhausted);
      if (s && s->items.size() >= kMaxStreamEntries)
        return r.error(err::collection_full("a stream", kMaxStreamEntries, "entries"));
      const StreamId last = s ? s->last_id : StreamId{};
      StreamId id;
      if (!t.id_given) {  // (streamNextID: now, or one past the last ID)
        const uint64_t ms = static_cast<uint64_t>(std::max<int64_t>(0, now_ns / 1'000'000));
        id = ms > last.ms ? StreamId{ms, 0} : last;
        if (!(ms > last.ms)) id.incr();
      } else if (!t.seq_given) {
        if (last.ms == t.id.ms) {
          if (last.seq == UINT64_MAX) return r.error(err::kStreamIdSmall);
          id = last;
          ++id.seq;
        } else {
          id = t.id;
        }
      } else {
        id = t.id;
      }
      if (id <= last) return r.error(err::kStreamIdSmall);
      if (!s) {
        e = typed(op, Kind::kStream, true, now_ns);
        if (!e) return;
        s = e->state<StreamValue*>();
      }
      s->append(id,
                std::vector<std::string>(a.begin() + static_cast<std::ptrdiff_t>(fields), a.end()),
                node_entries(), node_bytes());
      r.bulk(id.text());
      const int64_t trimmed = run_trim(*s, t);
      mark(e, op.key);
      log_event(notify::kStream, "xadd", op.key);
      if (trimmed) log_event(notify::kStream, "xtrim", op.key);
      return;
    }
    case DataCmd::kXLen: {
      StreamValue* s = existing(e);
      if (op.status != OpStatus::kOk) return;
      return r.integer(s ? static_cast<int64_t>(s->items.size()) : 0);
    }
    case DataCmd::kXRange:
    case DataCmd::kXRevRange: {
      const bool rev = c == DataCmd::kXRevRange;
      const std::string_view start_word = rev ? a[3] : a[2], end_word = rev ? a[2] : a[3];
      StreamId start, end;
      bool open;
      if (!parse_interval_id(start_word, 0, start, open)) return r.error(err::kStreamBadId);
      if (open && !start.incr()) return r.error(err::kStreamStartInterval);
      if (!parse_interval_id(end_word, UINT64_MAX, end, open)) return r.error(err::kStreamBadId);
      if (open && !end.decr()) return r.error(err::kStreamEndInterval);
      int64_t count = -1;
      for (size_t j = 4; j < a.size(); ++j) {
        if (iequals(a[j], "count") && j + 1 < a.size()) {
          if (!parse_int(a[++j], count)) return r.error(err::kNotInteger);
          if (count < 0) count = 0;
        } else {
          return r.error(err::kSyntax);
        }
      }
      StreamValue* s = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!s) return r.array(0);
      if (count == 0) return r.null_array();
      return reply_range(r, *s, start, end, count < 0 ? 0 : count, rev);
    }
    case DataCmd::kXDel: {
      StreamValue* s = existing(e);  // (the key first, as Redis: none answers 0 whatever the IDs)
      if (op.status != OpStatus::kOk) return;
      if (!s) return r.integer(0);
      std::vector<StreamId> ids(a.size() - 2);
      for (size_t j = 2; j < a.size(); ++j)
        if (!parse_stream_id(a[j], ids[j - 2], 0, true)) return r.error(err::kStreamBadId);
      int64_t deleted = 0;
      for (const StreamId& id : ids) {
        auto it = s->items.find(id);
        if (it == s->items.end()) continue;
        s->erase(it);
        ++deleted;
        if (id > s->max_deleted) s->max_deleted = id;
      }
      if (deleted) mark(e, op.key);
      return r.integer(deleted);
    }
    case DataCmd::kXTrim: {
      TrimArgs t;
      if (std::string why = parse_trim(a, false, t); !why.empty()) return r.error(why);
      StreamValue* s = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!s) return r.integer(0);
      const int64_t deleted = run_trim(*s, t);
      if (deleted) mark(e, op.key);
      return r.integer(deleted);
    }
    default: {  // XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]
      StreamId id, max_deleted;
      int64_t added = -1;
      if (!parse_stream_id(a[2], id, 0, true)) return r.error(err::kStreamBadId);
      for (size_t j = 3; j < a.size(); j += 2) {
        const bool more = j + 1 < a.size();
        if (iequals(a[j], "entriesadded") && more) {
          if (!parse_int(a[j + 1], added)) return r.error(err::kNotInteger);
          if (added < 0) return r.error(err::kStreamEntriesAdded);
        } else if (iequals(a[j], "maxdeletedid") && more) {
          if (!parse_stream_id(a[j + 1], max_deleted, 0, true)) return r.error(err::kStreamBadId);
          if (id < max_deleted) return r.error(err::kStreamSetIdMaxDeleted);
        } else {
          return r.error(err::kSyntax);
        }
      }
      StreamValue* s = existing(e);
      if (op.status != OpStatus::kOk) return;
      if (!s) return r.error(err::kNoSuchKey);
      if (!s->items.empty()) {
        if (id < s->items.rbegin()->first) return r.error(err::kStreamSetIdSmall);
        if (added != -1 && s->items.size() > static_cast<uint64_t>(added))
          return r.error(err::kStreamSetIdEntries);
      }
      s->last_id = id;
      if (added != -1) s->entries_added = static_cast<uint64_t>(added);
      if (max_deleted != StreamId{}) s->max_deleted = max_deleted;
      mark(e, op.key);
      return r.ok();
    }
  }
}

// XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...: what each stream holds after its ID,
// [[key, entries] ...] (RESP3: a map), only the streams that hold any; a null array when
// none does. With BLOCK (the connection waits between attempts), a null answer also names
// what each "$" stood for — each stream's last ID, space-separated in the null's text,
// which no door writes — for the attempts after it.
// XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...: with
// ">", the entries the group has not delivered (now the consumer's to acknowledge); with an
// ID, the consumer's own pending entries after it (answered even when none). A blocked
// reader's later attempt whose stream or group went is told so, as Redis tells it.
void Shard::stream_read(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  const bool grouped = op.data == DataCmd::kXReadGroup;
  int64_t count = 0;
  bool block = false, has_group = false, noack = false;
  std::string_view group, consumer;
  size_t streams = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    const bool more = i + 1 < a.size();
    if (iequals(a[i], "block") && more) {
      block = true;  // (its timeout is the connection's: checked before the op was sent)
      ++i;
    } else if (iequals(a[i], "count") && more) {
      if (!parse_int(a[++i], count)) return r.error(err::kNotInteger);
      if (count < 0) count = 0;
    } else if (iequals(a[i], "streams") && more) {
      streams = i + 1;
      if ((a.size() - streams) % 2 != 0) return r.error(err::kStreamUnbalanced);
      break;
    } else if (iequals(a[i], "group") && i + 2 < a.size()) {
      if (!grouped) return r.error(err::kStreamGroupOption);
      has_group = true;
      group = a[i + 1];
      consumer = a[i + 2];
      i += 2;
    } else if (iequals(a[i], "noack")) {
      if (!grouped) return r.error(err::kStreamNoAckOption);
      noack = true;
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (streams == 0) return r.error(err::kSyntax);
  if (grouped && !has_group) return r.error(err::kStreamMissingGroup);
  // (a woken reader takes at most Redis's XREAD_BLOCKED_DEFAULT_COUNT unless it said)
  if (op.waited && count == 0) count = 1000;
  const size_t n = (a.size() - streams) / 2;
  std::vector<StreamId> after(n);
  std::vector<Entry*> entries(n, nullptr);
  std::vector<StreamValue*> values(n, nullptr);
  std::vector<StreamGroup*> groups(n, nullptr);
  bool dollar = false;
  for (size_t k = 0; k < n; ++k) {
    const std::string_view key = a[streams + k];
    Shard& sh = *holder_of(key);
    Entry* e = sh.lookup(key, KeyTable::hash(key), now_ns);
    if (e && e->kind != Kind::kStream) {
      if (grouped && op.waited) return r.error(err::kStreamKeyGone);
      op.status = OpStatus::kWrongType;
      return;
    }
    entries[k] = e;
    values[k] = e ? e->state<StreamValue*>() : nullptr;
    if (grouped) {
      groups[k] = values[k] ? values[k]->group(group) : nullptr;
      if (!groups[k]) {
        if (op.waited) return r.error(e ? err::kStreamGroupGone : err::kStreamKeyGone);
        return r.error(err::no_key_or_group(key, group, " in XREADGROUP with GROUP option"));
      }
    }
    const std::string_view w = a[streams + n + k];
    if (w == "$") {
      if (grouped) return r.error(err::kStreamDollarInGroup);
      dollar = true;
      after[k] = values[k] ? values[k]->last_id : StreamId{};
    } else if (w == ">") {
      if (!grouped) return r.error(err::kStreamGtId);
      after[k] = StreamId{UINT64_MAX, UINT64_MAX};
    } else if (!parse_stream_id(w, after[k], 0, true)) {
      return r.error(err::kStreamBadId);
    }
  }
  // (what a group may still take, checked before anything changes)
  for (size_t k = 0; grouped && k < n; ++k) {
    const StreamGroup& g = *groups[k];
    if (!g.consumers.count(std::string(consumer)) && g.consumers.size() >= kMaxStreamConsumers)
      return r.error(err::collection_full("a consumer group", kMaxStreamConsumers, "consumers"));
    if (!noack && after[k].is_max() && g.pel.size() >= kMaxStreamEntries)
      return r.error(
          err::collection_full("a consumer group's pending list", kMaxStreamEntries, "entries"));
  }
  // Each stream in turn (a group's read moves it on: the same key twice is served once).
  const size_t head = r.items.size();
  if (op.resp3) {
    r.map(0);
  } else {
    r.array(0);
  }
  int64_t served = 0;
  for (size_t k = 0; k < n; ++k) {
    StreamValue* s = values[k];
    if (!s) continue;
    const StreamId last = s->items.empty() ? StreamId{} : s->items.rbegin()->first;
    const bool history = grouped && !after[k].is_max();
    if (grouped && !history) {
      if (s->items.empty() || !(last > groups[k]->last_id)) continue;
      after[k] = groups[k]->last_id;
    } else if (!grouped && (s->items.empty() || !(last > after[k]))) {
      continue;
    }
    ++served;
    if (!op.resp3) r.array(2);
    const std::string_view key = a[streams + k];
    r.bulk(key);
    if (!grouped) {
      StreamId start = after[k];
      start.incr();
      reply_range(r, *s, start, StreamId{UINT64_MAX, UINT64_MAX}, count, false);
      continue;
    }
    int64_t most = count;  // (new pending entries: no more than the group's list has room for)
    if (!history && !noack) {
      const auto room = static_cast<int64_t>(kMaxStreamEntries - groups[k]->pel.size());
      most = most > 0 ? std::min(most, room) : room;
    }
    reply_group_read(r, *s, *groups[k], key, consumer, after[k], history, most, noack,
                     now_ns / 1'000'000);
    holder_of(key)->mark(entries[k], key);
  }
  if (served > 0) {
    r.items[head].n = served;
    return;
  }
  r.items.resize(head);
  r.null_array();
  if (block && dollar) {  // (in the null's text, which no door writes)
    std::string& ids = r.items.back().s;
    for (size_t k = 0; k < n; ++k) ids += (k ? " " : "") + after[k].text();
  }
}

// XINFO STREAM key [FULL [COUNT n]] | GROUPS key | CONSUMERS key group (HELP: the door's).
void Shard::stream_info(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  Entry* e = typed(op, Kind::kStream, false, now_ns);
  if (op.status != OpStatus::kOk) return;
  if (!e) return r.error(err::kNoSuchKey);
  const StreamValue& s = *e->state<StreamValue*>();
  const std::string_view sub = a[1];
  const int64_t now_ms = now_ns / 1'000'000;
  if (iequals(sub, "consumers") && a.size() == 4) {
    auto g = s.groups.find(std::string(a[3]));
    if (g == s.groups.end()) return r.error(err::no_consumer_group(a[3], a[2]));
    r.array(static_cast<int64_t>(g->second.consumers.size()));
    for (const auto& [name, c] : g->second.consumers) {
      r.map(3);
      r.bulk("name");
      r.bulk(name);
      r.bulk("pending");
      r.integer(static_cast<int64_t>(c.pending.size()));
      r.bulk("idle");
      r.integer(std::max<int64_t>(0, now_ms - c.seen_ms));
    }
    return;
  }
  auto entries_read = [&](const StreamGroup& g) {
    r.bulk("entries-read");
    if (g.entries_read == -1) {
      r.null();
    } else {
      r.integer(g.entries_read);
    }
    r.bulk("lag");
    const int64_t lag = s.lag(g);
    if (lag == -1) {
      r.null();
    } else {
      r.integer(lag);
    }
  };
  if (iequals(sub, "groups") && a.size() == 3) {
    r.array(static_cast<int64_t>(s.groups.size()));
    for (const auto& [name, g] : s.groups) {
      r.map(6);
      r.bulk("name");
      r.bulk(name);
      r.bulk("consumers");
      r.integer(static_cast<int64_t>(g.consumers.size()));
      r.bulk("pending");
      r.integer(static_cast<int64_t>(g.pel.size()));
      r.bulk("last-delivered-id");
      r.bulk(g.last_id.text());
      entries_read(g);
    }
    return;
  }
  if (!iequals(sub, "stream")) return r.error(err::subcommand_syntax(sub, "XINFO"));
  bool full = false;
  int64_t count = 10;
  if (a.size() > 3) {
    if ((a.size() != 4 && a.size() != 6) || !iequals(a[3], "full"))
      return r.error(err::subcommand_syntax(sub, "XINFO"));
    full = true;
    if (a.size() == 6) {
      if (!iequals(a[4], "count")) return r.error(err::subcommand_syntax(sub, "XINFO"));
      if (!parse_int(a[5], count)) return r.error(err::kNotInteger);
      if (count < 0) count = 10;
    }
  }
  r.map(full ? 9 : 10);
  r.bulk("length");
  r.integer(static_cast<int64_t>(s.items.size()));
  r.bulk("radix-tree-keys");
  r.integer(static_cast<int64_t>(s.nodes.size()));
  r.bulk("radix-tree-nodes");
  r.integer(static_cast<int64_t>(s.nodes.size()) + 1);
  r.bulk("last-generated-id");
  r.bulk(s.last_id.text());
  r.bulk("max-deleted-entry-id");
  r.bulk(s.max_deleted.text());
  r.bulk("entries-added");
  r.integer(static_cast<int64_t>(s.entries_added));
  r.bulk("recorded-first-entry-id");
  r.bulk(s.first_id().text());
  const StreamId lo, hi{UINT64_MAX, UINT64_MAX};
  if (!full) {
    r.bulk("groups");
    r.integer(static_cast<int64_t>(s.groups.size()));
    r.bulk("first-entry");
    if (s.items.empty()) {
      r.null();
    } else {
      reply_entry(r, s.items.begin()->first, s.items.begin()->second);
    }
    r.bulk("last-entry");
    if (s.items.empty()) {
      r.null();
    } else {
      reply_entry(r, s.items.rbegin()->first, s.items.rbegin()->second);
    }
    return;
  }
  r.bulk("entries");
  reply_range(r, s, lo, hi, count, false);
  r.bulk("groups");
  r.array(static_cast<int64_t>(s.groups.size()));
  auto within = [&](size_t n) { return count == 0 || n < static_cast<size_t>(count); };
  for (const auto& [name, g] : s.groups) {
    r.map(7);
    r.bulk("name");
    r.bulk(name);
    r.bulk("last-delivered-id");
    r.bulk(g.last_id.text());
    entries_read(g);
    r.bulk("pel-count");
    r.integer(static_cast<int64_t>(g.pel.size()));
    r.bulk("pending");
    size_t shown = 0;
    for (auto p = g.pel.begin(); p != g.pel.end() && within(shown); ++p) ++shown;
    r.array(static_cast<int64_t>(shown));
    for (auto p = g.pel.begin(); shown > 0; ++p, --shown) {
      r.array(4);
      r.bulk(p->first.text());
      r.bulk(p->second.consumer);
      r.integer(p->second.delivered_ms);
      r.integer(static_cast<int64_t>(p->second.deliveries));
    }
    r.bulk("consumers");
    r.array(static_cast<int64_t>(g.consumers.size()));
    for (const auto& [cname, c] : g.consumers) {
      r.map(4);
      r.bulk("name");
      r.bulk(cname);
      r.bulk("seen-time");
      r.integer(c.seen_ms);
      r.bulk("pel-count");
      r.integer(static_cast<int64_t>(c.pending.size()));
      r.bulk("pending");
      const size_t mine = within(c.pending.size()) ? c.pending.size() : static_cast<size_t>(count);
      r.array(static_cast<int64_t>(mine));
      size_t k = 0;
      for (auto id = c.pending.begin(); k < mine; ++id, ++k) {
        const auto p = g.pel.find(*id);
        r.array(3);
        r.bulk(id->text());
        r.integer(p == g.pel.end() ? 0 : p->second.delivered_ms);
        r.integer(p == g.pel.end() ? 0 : static_cast<int64_t>(p->second.deliveries));
      }
    }
  }
}

// Streams' row of the kinds table (value_kinds.hpp). The snapshot's integers: the last ID
// given out, the largest deleted, the entries ever added; its list: one word per entry (its
// ID's two numbers, then each field and value, length-prefixed). Two copies do not merge
// (an append-only log's merge would invent an order): the serving copy stays. An emptied
// stream is still a key (as Redis keeps one), so a stream is never idle.
namespace {
StreamValue& stream_of(const Entry& e) { return *e.state<StreamValue*>(); }
void stream_make(Entry& e) { e.state<StreamValue*>() = new StreamValue(); }
void stream_free(Entry& e) { delete e.state<StreamValue*>(); }
bool stream_idle(const Entry&, int64_t) { return false; }
uint64_t stream_bytes(const Entry& e) {
  const StreamValue& s = stream_of(e);
  return sizeof(StreamValue) + s.bytes + s.nodes.size() * 64;
}
int64_t stream_usage(Entry& e) { return static_cast<int64_t>(stream_bytes(e)); }
const char* stream_encoding(Entry&) { return "stream"; }

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
bool get_u64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(8);
  return true;
}

void stream_snapshot(Entry& e, EntrySnapshot& snap) {
  const StreamValue& s = stream_of(e);
  snap.fields = {static_cast<int64_t>(s.last_id.ms), static_cast<int64_t>(s.last_id.seq),
                 static_cast<int64_t>(s.max_deleted.ms), static_cast<int64_t>(s.max_deleted.seq),
                 static_cast<int64_t>(s.entries_added)};
  snap.list.clear();
  snap.list.reserve(s.items.size());
  for (const auto& [id, item] : s.items) {
    std::string w;
    put_u64(w, id.ms);
    put_u64(w, id.seq);
    for (const std::string& p : item.pairs) {
      put_u64(w, p.size());
      w += p;
    }
    snap.list.push_back(std::move(w));
  }
  // Each group as (its name, a word): its last ID, read counter, consumers (name, seen time)
  // and pending entries (ID, delivery time, deliveries, its consumer's place in that list).
  snap.hash.clear();
  for (const auto& [name, g] : s.groups) {
    std::string w;
    put_u64(w, g.last_id.ms);
    put_u64(w, g.last_id.seq);
    put_u64(w, static_cast<uint64_t>(g.entries_read));
    put_u64(w, g.consumers.size());
    std::map<std::string_view, uint64_t> place;
    for (const auto& [cname, c] : g.consumers) {
      place.emplace(cname, place.size());
      put_u64(w, cname.size());
      w += cname;
      put_u64(w, static_cast<uint64_t>(c.seen_ms));
    }
    put_u64(w, g.pel.size());
    for (const auto& [id, p] : g.pel) {
      auto at = place.find(p.consumer);
      if (at == place.end()) continue;  // (not expected: every pending entry has its consumer)
      put_u64(w, id.ms);
      put_u64(w, id.seq);
      put_u64(w, static_cast<uint64_t>(p.delivered_ms));
      put_u64(w, p.deliveries);
      put_u64(w, at->second);
    }
    snap.hash.emplace_back(name, std::move(w));
  }
}

// A group's word (stream_snapshot); false if it does not read back whole.
bool restore_group(std::string_view in, StreamGroup& g) {
  uint64_t v, consumers, pending;
  if (!get_u64(in, g.last_id.ms) || !get_u64(in, g.last_id.seq) || !get_u64(in, v) ||
      !get_u64(in, consumers) || consumers > kMaxStreamConsumers)
    return false;
  g.entries_read = static_cast<int64_t>(v) < -1 ? -1 : static_cast<int64_t>(v);
  std::vector<std::string> names;
  for (uint64_t i = 0; i < consumers; ++i) {
    uint64_t len, seen;
    if (!get_u64(in, len) || len > in.size()) return false;
    names.emplace_back(in.substr(0, len));
    in.remove_prefix(len);
    if (!get_u64(in, seen)) return false;
    g.consumers[names.back()].seen_ms = static_cast<int64_t>(seen);
  }
  if (!get_u64(in, pending) || pending > kMaxStreamEntries) return false;
  for (uint64_t i = 0; i < pending; ++i) {
    StreamId id;
    uint64_t at, deliveries, place;
    if (!get_u64(in, id.ms) || !get_u64(in, id.seq) || !get_u64(in, at) ||
        !get_u64(in, deliveries) || !get_u64(in, place) || place >= names.size())
      return false;
    g.pel[id] = StreamGroup::Pending{static_cast<int64_t>(at), deliveries, names[place]};
    g.consumers[names[place]].pending.insert(id);
  }
  return in.empty();
}

// (a snapshot from the wire or the disk: an entry that does not read back whole, or out of
// order, is dropped, never trusted)
void stream_restore(Entry& e, const EntrySnapshot& snap) {
  StreamValue& s = stream_of(e);
  s.items.clear();
  if (snap.fields.size() == 5) {
    s.last_id = {static_cast<uint64_t>(snap.fields[0]), static_cast<uint64_t>(snap.fields[1])};
    s.max_deleted = {static_cast<uint64_t>(snap.fields[2]), static_cast<uint64_t>(snap.fields[3])};
    s.entries_added = static_cast<uint64_t>(snap.fields[4]);
  }
  for (const std::string& word : snap.list) {
    std::string_view in = word;
    StreamId id;
    if (!get_u64(in, id.ms) || !get_u64(in, id.seq)) continue;
    std::vector<std::string> pairs;
    uint64_t len;
    bool whole = true;
    while (!in.empty()) {
      if (!get_u64(in, len) || len > in.size()) {
        whole = false;
        break;
      }
      pairs.emplace_back(in.substr(0, len));
      in.remove_prefix(len);
    }
    if (!whole || pairs.empty() || pairs.size() % 2 != 0) continue;
    if (!s.items.empty() && !(s.items.rbegin()->first < id)) continue;
    s.items.emplace(id, StreamValue::Item{std::move(pairs), 0});
  }
  if (!s.items.empty() && s.last_id < s.items.rbegin()->first) s.last_id = s.items.rbegin()->first;
  s.renode(node_entries());
  s.groups.clear();
  for (const auto& [name, word] : snap.hash) {
    if (s.groups.size() >= kMaxStreamGroups) break;
    StreamGroup g;
    if (restore_group(word, g)) s.groups.emplace(name, std::move(g));
  }
  s.recount_groups();
}
}  // namespace

const KindRow kStreamKind = {Kind::kStream,
                             sizeof(StreamValue*),
                             5,
                             false,
                             &stream_make,
                             &stream_free,
                             &stream_idle,
                             nullptr,
                             &stream_bytes,
                             &stream_usage,
                             &stream_encoding,
                             &stream_snapshot,
                             &stream_restore,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

}  // namespace fg
