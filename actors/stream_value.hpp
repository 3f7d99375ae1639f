// A stream's entries (Redis's t_stream.c): each an ID (milliseconds-sequence, growing) and
// its field-value pairs, in ID order; the last ID it ever gave out, the largest it deleted
// and how many entries it was ever given. Entries sit in nodes of up to
// stream-node-max-entries (as Redis's radix tree holds them in listpacks), which is what an
// approximate trim (MAXLEN ~) removes whole. At most kMaxStreamEntries entries; what they
// hold (`bytes`, for the key's charge: accounts.hpp) is kept by the functions that change
// them.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "words.hpp"

namespace fg {

constexpr size_t kMaxStreamEntries = 100'000;
// A stream's consumer groups at most, and a group's consumers; a group's pending entries
// are held to kMaxStreamEntries (a read that would pass it is refused).
constexpr size_t kMaxStreamGroups = 1'000;
constexpr size_t kMaxStreamConsumers = 10'000;

struct StreamId {
  uint64_t ms = 0, seq = 0;
  bool operator<(const StreamId& o) const { return ms != o.ms ? ms < o.ms : seq < o.seq; }
  bool operator==(const StreamId& o) const { return ms == o.ms && seq == o.seq; }
  bool operator!=(const StreamId& o) const { return !(*this == o); }
  bool operator<=(const StreamId& o) const { return !(o < *this); }
  bool operator>(const StreamId& o) const { return o < *this; }
  bool operator>=(const StreamId& o) const { return !(*this < o); }
  bool is_max() const { return ms == UINT64_MAX && seq == UINT64_MAX; }
  std::string text() const { return std::to_string(ms) + "-" + std::to_string(seq); }
  // The next ID (false past the last possible one: it stays there).
  bool incr() {
    if (seq != UINT64_MAX) return ++seq, true;
    if (ms == UINT64_MAX) return false;
    ++ms;
    seq = 0;
    return true;
  }
  bool decr() {
    if (seq != 0) return --seq, true;
    if (ms == 0) return false;
    --ms;
    seq = UINT64_MAX;
    return true;
  }
};

// An unsigned 64-bit number as Redis's string2ull reads one: a strict decimal, else what
// strtoull takes whole (so "+5", " 7" and "007" too, not "-1").
inline bool parse_u64(std::string_view s, uint64_t& out) {
  int64_t v;
  if (parse_int(s, v)) {
    if (v < 0) return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  if (s.empty() || s.size() > 127) return false;
  const std::string buf(s);
  if (buf.find('\0') != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long r = std::strtoull(buf.c_str(), &end, 10);
  if (errno == EINVAL || errno == ERANGE || *end != '\0') return false;
  out = r;
  return true;
}

// A stream ID argument as streamGenericParseIDOrReply reads it: "-" and "+" (unless
// `strict`), "ms-seq", "ms" (its sequence `missing_seq`), and with `seq_given` also
// "ms-*" (then *seq_given is false). False: "Invalid stream ID ...".
inline bool parse_stream_id(std::string_view s, StreamId& id, uint64_t missing_seq, bool strict,
                            bool* seq_given = nullptr) {
  if (s.size() > 127) return false;
  if (strict && (s == "-" || s == "+")) return false;
  if (seq_given) *seq_given = true;
  if (s == "-") return id = {0, 0}, true;
  if (s == "+") return id = {UINT64_MAX, UINT64_MAX}, true;
  const size_t dash = s.find('-');
  uint64_t ms, seq = missing_seq;
  if (!parse_u64(s.substr(0, dash), ms)) return false;
  if (dash != std::string_view::npos) {
    const std::string_view tail = s.substr(dash + 1);
    if (seq_given && tail == "*") {
      seq = 0;
      *seq_given = false;
    } else if (!parse_u64(tail, seq)) {
      return false;
    }
  }
  id = {ms, seq};
  return true;
}

// A consumer group (Redis's streamCG): the last ID it delivered, its read counter (-1:
// unknown), its pending entries (delivered, not yet acknowledged: to whom, when, how often)
// and its consumers, each with its own pending IDs and when it was last seen (Unix ms).
struct StreamGroup {
  struct Pending {
    int64_t delivered_ms = 0;
    uint64_t deliveries = 1;
    std::string consumer;
  };
  struct Consumer {
    int64_t seen_ms = 0;
    std::set<StreamId> pending;
  };
  StreamId last_id;
  int64_t entries_read = -1;
  std::map<StreamId, Pending> pel;
  std::map<std::string, Consumer> consumers;
};

struct StreamValue {
  struct Item {
    std::vector<std::string> pairs;  // field, value, field, value, ...
    uint64_t node;
  };
  struct Node {
    uint32_t live = 0;   // entries not deleted
    uint32_t added = 0;  // entries ever appended to it
    size_t bytes = 0;    // what they held when appended (stream-node-max-bytes)
    StreamId last;       // its last entry's ID (deleted or not)
  };
  std::map<StreamId, Item> items;  // (read freely; changed through the functions below)
  std::map<uint64_t, Node> nodes;
  std::map<std::string, StreamGroup> groups;  // by name (read freely; changed below)
  uint64_t next_node = 0;
  StreamId last_id, max_deleted;
  uint64_t entries_added = 0;
  size_t bytes = 0;
  static constexpr size_t kItemBytes = 64;  // a map node and its vector, besides the strings

  static size_t item_bytes(const std::vector<std::string>& pairs) {
    size_t n = kItemBytes;
    for (const std::string& p : pairs) n += p.size() + 32;
    return n;
  }
  // Appends an entry at `id` (> last_id), in the last node unless it is full by
  // `node_entries` entries or `node_bytes` bytes (0: no byte cap).
  void append(StreamId id, std::vector<std::string> pairs, int64_t node_entries,
              int64_t node_bytes) {
    size_t size = 0;
    for (const std::string& p : pairs) size += p.size() + 2;
    if (nodes.empty() ||
        (node_entries > 0 && nodes.rbegin()->second.added >= static_cast<uint64_t>(node_entries)) ||
        (node_bytes > 0 && nodes.rbegin()->second.bytes + size > static_cast<uint64_t>(node_bytes)))
      nodes.emplace(next_node++, Node{});
    Node& n = nodes.rbegin()->second;
    ++n.live;
    ++n.added;
    n.bytes += size;
    n.last = id;
    bytes += item_bytes(pairs);
    items.emplace(id, Item{std::move(pairs), nodes.rbegin()->first});
    last_id = id;
    ++entries_added;
  }
  // Removes the entry at `it` (its node goes with its last live entry).
  std::map<StreamId, Item>::iterator erase(std::map<StreamId, Item>::iterator it) {
    auto n = nodes.find(it->second.node);
    if (n != nodes.end() && --n->second.live == 0) nodes.erase(n);
    bytes -= item_bytes(it->second.pairs);
    return items.erase(it);
  }
  // Trims from the oldest entry: to at most `maxlen` entries (`by_len`), else those below
  // `minid`. `approx`: whole nodes only, and at most `limit` entries (0: none) — Redis's
  // streamTrim. Returns how many went.
  int64_t trim(bool by_len, uint64_t maxlen, StreamId minid, bool approx, int64_t limit) {
    int64_t deleted = 0;
    while (!items.empty()) {
      if (by_len && items.size() <= maxlen) break;
      auto first = nodes.begin();
      const int64_t entries = first->second.live;
      if (limit > 0 && deleted + entries > limit) break;
      const bool whole = by_len ? items.size() - static_cast<uint64_t>(entries) >= maxlen
                                : first->second.last < minid;
      if (whole) {
        const uint64_t node = first->first;
        for (auto it = items.begin(); it != items.end() && it->second.node == node;) it = erase(it);
        nodes.erase(node);  // (gone with its last entry already; harmless if not)
        deleted += entries;
        continue;
      }
      if (approx) break;
      const uint64_t node = first->first;
      for (auto it = items.begin(); it != items.end() && it->second.node == node;) {
        if (by_len ? items.size() <= maxlen : it->first >= minid) return deleted;
        it = erase(it);
        ++deleted;
      }
    }
    return deleted;
  }
  // After the entries were filled or emptied whole: nodes and bytes made again.
  void renode(int64_t node_entries) {
    nodes.clear();
    bytes = 0;
    next_node = 0;
    for (auto& [id, item] : items) {
      if (nodes.empty() ||
          (node_entries > 0 && nodes.rbegin()->second.added >= static_cast<uint64_t>(node_entries)))
        nodes.emplace(next_node++, Node{});
      Node& n = nodes.rbegin()->second;
      ++n.live;
      ++n.added;
      n.last = id;
      item.node = nodes.rbegin()->first;
      bytes += item_bytes(item.pairs);
    }
  }
  StreamId first_id() const { return items.empty() ? StreamId{} : items.begin()->first; }

  // --- consumer groups (what they hold is in `bytes` too) ---
  static size_t group_bytes(std::string_view name) { return 160 + name.size(); }
  static size_t consumer_bytes(std::string_view name) { return 96 + name.size(); }
  static size_t pending_bytes(std::string_view consumer) { return 144 + consumer.size(); }

  StreamGroup* group(std::string_view name) {
    auto it = groups.find(std::string(name));
    return it == groups.end() ? nullptr : &it->second;
  }
  // A new group (null if the name is taken).
  StreamGroup* add_group(std::string_view name, StreamId last, int64_t entries_read) {
    auto [it, fresh] = groups.try_emplace(std::string(name));
    if (!fresh) return nullptr;
    it->second.last_id = last;
    it->second.entries_read = entries_read;
    bytes += group_bytes(name);
    return &it->second;
  }
  void drop_group(std::string_view name) {
    auto it = groups.find(std::string(name));
    if (it == groups.end()) return;
    for (const auto& [c, _] : it->second.consumers) bytes -= consumer_bytes(c);
    for (const auto& [_, p] : it->second.pel) bytes -= pending_bytes(p.consumer);
    bytes -= group_bytes(name);
    groups.erase(it);
  }
  // The consumer `name` of `g`, made if new (`made` says); its seen time is `now_ms` when
  // `seen`.
  StreamGroup::Consumer& consumer(StreamGroup& g, std::string_view name, int64_t now_ms,
                                  bool seen = true, bool* made = nullptr) {
    auto [it, fresh] = g.consumers.try_emplace(std::string(name));
    if (fresh) {
      bytes += consumer_bytes(name);
      it->second.seen_ms = now_ms;
    } else if (seen) {
      it->second.seen_ms = now_ms;
    }
    if (made) *made = fresh;
    return it->second;
  }
  // Removes a consumer and its pending entries; how many it had.
  int64_t drop_consumer(StreamGroup& g, std::string_view name) {
    auto it = g.consumers.find(std::string(name));
    if (it == g.consumers.end()) return 0;
    const auto n = static_cast<int64_t>(it->second.pending.size());
    for (const StreamId& id : it->second.pending) {
      auto p = g.pel.find(id);
      if (p == g.pel.end()) continue;
      bytes -= pending_bytes(p->second.consumer);
      g.pel.erase(p);
    }
    bytes -= consumer_bytes(name);
    g.consumers.erase(it);
    return n;
  }
  // `id` pending with `owner` (made if new: delivered now, once), taken from whoever had it.
  StreamGroup::Pending& own(StreamGroup& g, StreamId id, const std::string& owner, int64_t now_ms) {
    auto [it, fresh] = g.pel.try_emplace(id);
    StreamGroup::Pending& p = it->second;
    if (fresh) {
      p.delivered_ms = now_ms;
      p.deliveries = 1;
    } else if (p.consumer != owner) {
      if (auto c = g.consumers.find(p.consumer); c != g.consumers.end())
        c->second.pending.erase(id);
      bytes -= pending_bytes(p.consumer);
    } else {
      return p;
    }
    p.consumer = owner;
    bytes += pending_bytes(owner);
    g.consumers[owner].pending.insert(id);
    return p;
  }
  // Acknowledges a pending entry: gone from the group and its consumer.
  std::map<StreamId, StreamGroup::Pending>::iterator ack(
      StreamGroup& g, std::map<StreamId, StreamGroup::Pending>::iterator it) {
    if (auto c = g.consumers.find(it->second.consumer); c != g.consumers.end())
      c->second.pending.erase(it->first);
    bytes -= pending_bytes(it->second.consumer);
    return g.pel.erase(it);
  }
  // Whether an entry was deleted in [start, end] (streamRangeHasTombstones).
  bool tombstones_in(StreamId start, StreamId end) const {
    if (items.empty() || max_deleted == StreamId{}) return false;
    if (max_deleted < first_id()) return false;
    return start <= max_deleted && max_deleted <= end;
  }
  // How many entries came before and up to `id` (streamEstimateDistanceFromFirstEverEntry);
  // -1 when that cannot be known.
  int64_t entries_upto(StreamId id) const {
    const auto added = static_cast<int64_t>(entries_added);
    if (entries_added == 0) return 0;
    if (items.empty() && id <= last_id) return added;
    if (id == last_id) return added;
    if (id > last_id) return -1;
    const StreamId first = first_id();
    if (max_deleted == StreamId{} || max_deleted < first) {
      const auto length = static_cast<int64_t>(items.size());
      if (id < first) return added - length;
      if (id == first) return added - length + 1;
    }
    return -1;
  }
  // A group's lag (entries not yet delivered to it), -1 when unknown (streamReplyWithCGLag).
  int64_t lag(const StreamGroup& g) const {
    if (entries_added == 0) return 0;
    if (g.entries_read != -1 && !tombstones_in(g.last_id, StreamId{UINT64_MAX, UINT64_MAX}))
      return static_cast<int64_t>(entries_added) - g.entries_read;
    const int64_t read = entries_upto(g.last_id);
    return read == -1 ? -1 : static_cast<int64_t>(entries_added) - read;
  }
  // The group delivered `id` (greater than its last): its last ID and read counter move on.
  void delivered(StreamGroup& g, StreamId id) const {
    if (g.entries_read != -1 && !tombstones_in(id, StreamId{UINT64_MAX, UINT64_MAX})) {
      ++g.entries_read;
    } else if (entries_added) {
      g.entries_read = entries_upto(id);
    }
    g.last_id = id;
  }
  // What the groups hold, counted again (after a restore).
  void recount_groups() {
    for (const auto& [name, g] : groups) {
      bytes += group_bytes(name);
      for (const auto& [c, _] : g.consumers) bytes += consumer_bytes(c);
      for (const auto& [_, p] : g.pel) bytes += pending_bytes(p.consumer);
    }
  }
};

}  // namespace fg
