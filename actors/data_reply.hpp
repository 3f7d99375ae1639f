// A data command's reply as plain data: the shard writes it, the RESP door encodes it (RESP2
// or RESP3), a forward carries it between nodes. Nothing here knows a wire format.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

struct ReplyItem {
  enum class Type : uint8_t {
    kInt,        // n
    kBulk,       // s
    kNull,       // a missing value (RESP2 $-1, RESP3 _)
    kStatus,     // s ("OK")
    kError,      // s, with its code word ("ERR ...", "WRONGTYPE ...")
    kArray,      // n elements follow
    kDouble,     // s: the number as text (RESP2 bulk, RESP3 double)
    kMap,        // n pairs (2n elements) follow (RESP2: a flat array)
    kNullArray,  // a missing array (RESP2 *-1, RESP3 _)
    // What scripts may answer besides (Redis's {set=}, booleans, {big_number=} and
    // {verbatim_string=} replies):
    kSet,        // n elements follow (RESP2: an array)
    kBool,       // n: 0 or 1 (RESP2: an integer)
    kBigNumber,  // s: the digits (RESP2: bulk)
    kVerbatim,   // s: "fmt:text", fmt three characters (RESP2: bulk of the text)
  };
  static constexpr Type kLastType = Type::kVerbatim;
  // How many elements follow an item of this type (in its own count n).
  static int64_t children(Type t, int64_t n) {
    return t == Type::kArray || t == Type::kSet ? n : t == Type::kMap ? 2 * n : 0;
  }
  Type type = Type::kNull;
  int64_t n = 0;
  std::string s;
};

struct DataReply {
  std::vector<ReplyItem> items;

  void integer(int64_t v) { items.push_back({ReplyItem::Type::kInt, v, {}}); }
  void bulk(std::string_view b) { items.push_back({ReplyItem::Type::kBulk, 0, std::string(b)}); }
  void null() { items.push_back({ReplyItem::Type::kNull, 0, {}}); }
  void status(std::string_view t) {
    items.push_back({ReplyItem::Type::kStatus, 0, std::string(t)});
  }
  void error(std::string_view t) { items.push_back({ReplyItem::Type::kError, 0, std::string(t)}); }
  void array(int64_t n) { items.push_back({ReplyItem::Type::kArray, n, {}}); }
  void map(int64_t n) { items.push_back({ReplyItem::Type::kMap, n, {}}); }
  void null_array() { items.push_back({ReplyItem::Type::kNullArray, 0, {}}); }
  void set(int64_t n) { items.push_back({ReplyItem::Type::kSet, n, {}}); }
  void boolean(bool b) { items.push_back({ReplyItem::Type::kBool, b ? 1 : 0, {}}); }
  void ok() { status("OK"); }
  // A score as Redis writes one ("%.17g"; "inf", "-inf").
  void dbl(double v) {
    char buf[40];
    const int n = std::isinf(v) ? std::snprintf(buf, sizeof buf, "%s", v > 0 ? "inf" : "-inf")
                                : std::snprintf(buf, sizeof buf, "%.17g", v);
    items.push_back({ReplyItem::Type::kDouble, 0, std::string(buf, static_cast<size_t>(n))});
  }
  // A double already written out (INCREX BYFLOAT's long doubles): RESP3's double, else bulk.
  void double_text(std::string t) { items.push_back({ReplyItem::Type::kDouble, 0, std::move(t)}); }
  bool empty() const { return items.empty(); }
  // About what it holds, in bytes (what a client's replies are counted at).
  int64_t bytes() const {
    int64_t n = 0;
    for (const ReplyItem& i : items) n += static_cast<int64_t>(sizeof(ReplyItem) + i.s.capacity());
    return n;
  }
  void clear() { items.clear(); }
  bool is_error() const { return !items.empty() && items[0].type == ReplyItem::Type::kError; }
};

// RANDOMKEY's parts, one per shard (Merge::kPick): each is [keys held, a random draw, a key
// or null]. The key one of them holds, chosen in proportion to how many keys each holds (the
// first part's draw decides), or null when none holds any.
inline const ReplyItem* pick_part(const std::vector<const DataReply*>& parts) {
  uint64_t total = 0;
  for (const DataReply* p : parts)
    if (p->items.size() == 4 && p->items[3].type == ReplyItem::Type::kBulk)
      total += static_cast<uint64_t>(p->items[1].n);
  if (total == 0) return nullptr;
  uint64_t at = static_cast<uint64_t>(parts[0]->items[2].n) % total;
  for (const DataReply* p : parts) {
    if (p->items.size() != 4 || p->items[3].type != ReplyItem::Type::kBulk) continue;
    const auto w = static_cast<uint64_t>(p->items[1].n);
    if (at < w) return &p->items[3];
    at -= w;
  }
  return nullptr;
}

}  // namespace fg
