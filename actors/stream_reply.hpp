// How stream entries are answered (data_stream.cpp, data_stream_groups.cpp): an entry as
// [id, [field, value, ...]], a range of them, and the interval bounds XRANGE, XPENDING and
// XAUTOCLAIM read.
#pragma once
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "data_reply.hpp"
#include "stream_value.hpp"

namespace fg {

inline void reply_entry(DataReply& r, const StreamId& id, const StreamValue::Item& item) {
  r.array(2);
  r.bulk(id.text());
  r.array(static_cast<int64_t>(item.pairs.size()));
  for (const std::string& p : item.pairs) r.bulk(p);
}

// The entries in [start, end] (from the end when `rev`), at most `count` (0: all).
inline void reply_range(DataReply& r, const StreamValue& s, StreamId start, StreamId end,
                        int64_t count, bool rev) {
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

// An interval's bound (streamParseIntervalIDOrReply): "(" before an ID opens it (`open`), a
// missing sequence is `missing`. False: not an ID.
inline bool parse_interval_id(std::string_view w, uint64_t missing, StreamId& id, bool& open) {
  open = w.size() > 1 && w[0] == '(';
  return open ? parse_stream_id(w.substr(1), id, missing, true)
              : parse_stream_id(w, id, missing, false);
}

// One stream's part of an XREADGROUP answer, and what it does to the group
// (data_stream_groups.cpp).
void reply_group_read(DataReply& r, StreamValue& s, StreamGroup& g, std::string_view key,
                      std::string_view consumer, StreamId after, bool history, int64_t count,
                      bool noack, int64_t now_ms);

}  // namespace fg
