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
#include <string>
#include <string_view>
#include <vector>

#include "words.hpp"

namespace fg {

constexpr size_t kMaxStreamEntries = 100'000;

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
};

}  // namespace fg
