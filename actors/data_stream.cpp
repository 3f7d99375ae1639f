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

void reply_entry(DataReply& r, const StreamId& id, const StreamValue::Item& item) {
  r.array(2);
  r.bulk(id.text());
  r.array(static_cast<int64_t>(item.pairs.size()));
  for (const std::string& p : item.pairs) r.bulk(p);
}

// The entries in [start, end] (from the end when `rev`), at most `count` (0: all).
void reply_range(DataReply& r, const StreamValue& s, StreamId start, StreamId end, int64_t count,
                 bool rev) {
  std::vector<std::map<StreamId, StreamValue::Item>::const_iterator> hits;
  if (!(end < start)) {
    if (!rev) {
      for (auto it = s.items.lower_bound(start); it != s.items.end() && it->first <= end; ++it) {
        if (count > 0 && static_cast<int64_t>(hits.size()) >= count) break;
        hits.push_back(it);
      }
    } else {
      auto it = s.items.upper_bound(end);
      while (it != s.items.begin()) {
        --it;
        if (it->first < start) break;
        if (count > 0 && static_cast<int64_t>(hits.size()) >= count) break;
        hits.push_back(it);
      }
    }
  }
  r.array(static_cast<int64_t>(hits.size()));
  for (const auto& it : hits) reply_entry(r, it->first, it->second);
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
      run_trim(*s, t);
      mark(e, op.key);
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
      // (streamParseIntervalIDOrReply: "(" opens the interval)
      auto interval = [&](std::string_view w, uint64_t missing, StreamId& id, bool& open) {
        open = w.size() > 1 && w[0] == '(';
        return open ? parse_stream_id(w.substr(1), id, missing, true)
                    : parse_stream_id(w, id, missing, false);
      };
      StreamId start, end;
      bool open;
      if (!interval(start_word, 0, start, open)) return r.error(err::kStreamBadId);
      if (open && !start.incr()) return r.error(err::kStreamStartInterval);
      if (!interval(end_word, UINT64_MAX, end, open)) return r.error(err::kStreamBadId);
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
void Shard::stream_read(ShardOp& op, int64_t now_ns) {
  const auto& a = *op.args;
  DataReply& r = *op.reply;
  int64_t count = 0;
  bool block = false;
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
      return r.error(err::kStreamGroupOption);
    } else if (iequals(a[i], "noack")) {
      return r.error(err::kStreamNoAckOption);
    } else {
      return r.error(err::kSyntax);
    }
  }
  if (streams == 0) return r.error(err::kSyntax);
  const size_t n = (a.size() - streams) / 2;
  std::vector<StreamId> after(n);
  std::vector<const StreamValue*> values(n, nullptr);
  bool dollar = false;
  for (size_t k = 0; k < n; ++k) {
    const std::string_view key = a[streams + k];
    Shard& sh = *holder_of(key);
    Entry* e = sh.lookup(key, KeyTable::hash(key), now_ns);
    if (e && e->kind != Kind::kStream) {
      op.status = OpStatus::kWrongType;
      return;
    }
    values[k] = e ? e->state<StreamValue*>() : nullptr;
    const std::string_view w = a[streams + n + k];
    if (w == "$") {
      dollar = true;
      after[k] = values[k] ? values[k]->last_id : StreamId{};
    } else if (w == ">") {
      return r.error(err::kStreamGtId);
    } else if (!parse_stream_id(w, after[k], 0, true)) {
      return r.error(err::kStreamBadId);
    }
  }
  std::vector<size_t> served;
  for (size_t k = 0; k < n; ++k) {
    const StreamValue* s = values[k];
    if (s && !s->items.empty() && s->items.rbegin()->first > after[k]) served.push_back(k);
  }
  if (served.empty()) {
    r.null_array();
    if (block && dollar) {  // (in the null's text, which no door writes)
      std::string& ids = r.items.back().s;
      for (size_t k = 0; k < n; ++k) ids += (k ? " " : "") + after[k].text();
    }
    return;
  }
  if (op.resp3) {
    r.map(static_cast<int64_t>(served.size()));
  } else {
    r.array(static_cast<int64_t>(served.size()));
  }
  for (size_t k : served) {
    if (!op.resp3) r.array(2);
    r.bulk(a[streams + k]);
    StreamId start = after[k];
    start.incr();
    reply_range(r, *values[k], start, StreamId{UINT64_MAX, UINT64_MAX}, count, false);
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
  if (iequals(sub, "consumers") && a.size() == 4) {
    return r.error(err::no_consumer_group(a[3], a[2]));  // (no stream here has groups)
  }
  if (iequals(sub, "groups") && a.size() == 3) return r.array(0);
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
    r.integer(0);
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
  r.array(0);
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
