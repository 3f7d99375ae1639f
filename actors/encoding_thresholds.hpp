// redis-server's encoding thresholds (hash-max-listpack-entries and the like). Floodgate
// keeps values its own way, so these change nothing it stores; CONFIG SET accepts them (as
// clients and Redis's own tests set them) and OBJECT ENCODING answers by them what
// redis-server would report for a value. One set per process, Redis 7.0's defaults. The
// exception: a stream's nodes (stream-node-max-entries, -bytes), which decide what an
// approximate trim removes, as Redis's listpacks do.
#pragma once
#include <atomic>
#include <cstdint>

namespace fg {

struct EncodingThresholds {
  std::atomic<int64_t> hash_entries{128};  // hash-max-listpack-entries (…-ziplist-…)
  std::atomic<int64_t> hash_value{64};     // hash-max-listpack-value
  std::atomic<int64_t> zset_entries{128};  // zset-max-listpack-entries
  std::atomic<int64_t> zset_value{64};     // zset-max-listpack-value
  std::atomic<int64_t> set_intset{512};    // set-max-intset-entries
  std::atomic<int64_t> list_size{-2};      // list-max-listpack-size
  std::atomic<int64_t> list_depth{0};      // list-compress-depth
  // Streams' nodes (what an approximate trim removes whole): stream-node-max-entries, -bytes.
  std::atomic<int64_t> stream_node_entries{100};
  std::atomic<int64_t> stream_node_bytes{4096};
};

inline EncodingThresholds& encoding_thresholds() {
  static EncodingThresholds t;
  return t;
}

}  // namespace fg
