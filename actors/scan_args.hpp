// The arguments of the SCAN family (db.c's scanGenericCommand), shared by SCAN, HSCAN, SSCAN
// and ZSCAN, and the cursor arithmetic they share.
#pragma once
#include <cstdint>
#include <queue>
#include <string_view>
#include <vector>

#include "data_reply.hpp"
#include "glob.hpp"

namespace fg {

// A SCAN cursor as Redis reads it (strtoull, to the end, no leading space, no overflow): an
// optional sign (a '-' negates, modulo 2^64, as strtoull does), decimal digits, or nothing at
// all (cursor 0).
bool parse_unsigned_cursor(std::string_view s, uint64_t& out);

struct ScanArgs {
  uint64_t count = 10;  // COUNT: about how many entries one call looks at (a hint, as there)
  std::string_view pattern = "*";
  std::string_view type;  // SCAN's TYPE ("": any)
};

// The options from word `from` on: MATCH pattern, COUNT n (at least 1), and for SCAN only
// TYPE type. False, with the error replied, on any other.
bool parse_scan_options(const std::vector<std::string_view>& a, size_t from, bool with_type,
                        ScanArgs& out, DataReply& r);

// MATCH's test, as scanGenericCommand and keysCommand apply it: "*" takes everything (the
// empty string too, which stringmatchlen would not match); any other pattern is read once.
class ScanFilter {
 public:
  explicit ScanFilter(std::string_view pattern, size_t max_len = SIZE_MAX)
      : all_(pattern == "*"), glob_(all_ ? std::string_view() : pattern, false, max_len) {}
  bool operator()(std::string_view s) const { return all_ || glob_.match(s); }

 private:
  bool all_;
  GlobPattern glob_;
};

// A container (hash, set, sorted set) this small answers its scan whole, under cursor 0, as
// redis-server answers one held in its small encodings; a larger one about COUNT entries a
// call (the cursor: where its members stand in the order of their hashes).
constexpr size_t kScanWhole = 128;

// One call of a larger container's scan. `each(visit)` calls visit(member) for every member
// (a string_view). Of the members whose hash is at least `cursor`, the `count` with the
// least hashes are given to `fn` (with any that share the last one's hash); returns the next
// cursor (one past the last hash given), or 0 when none is left. Members present for the
// whole scan are each given at least once, whatever is added or removed between calls. A
// call looks at every member's hash twice: cheap, and bounded by the container's cap, while
// the pattern is matched against about `count` of them only.
uint64_t scan_hash(std::string_view member);

template <class Each, class Fn>
uint64_t scan_by_hash(Each&& each, uint64_t cursor, uint64_t count, Fn&& fn) {
  std::priority_queue<uint64_t> least;  // the `count` least hashes >= cursor, largest on top
  each([&](std::string_view m) {
    const uint64_t h = scan_hash(m);
    if (h < cursor) return;
    if (least.size() < count) {
      least.push(h);
    } else if (h < least.top()) {
      least.pop();
      least.push(h);
    }
  });
  if (least.empty()) return 0;
  const uint64_t last = least.top();
  const bool more = least.size() >= count;
  each([&](std::string_view m) {
    const uint64_t h = scan_hash(m);
    if (h >= cursor && h <= last) fn(m);
  });
  return more && last != UINT64_MAX ? last + 1 : 0;
}

}  // namespace fg
