// SlowLog: the node's slow log (SLOWLOG), Redis's: the last slowlog-max-len commands that
// took longer than slowlog-log-slower-than, with their words, when, how long, and who sent
// them.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "live_value.hpp"

namespace fg {

struct SlowEntry {
  int64_t id = 0;
  int64_t unix_s = 0;
  int64_t duration_us = 0;
  std::vector<std::string> words;  // trimmed as Redis trims them (add)
  std::string addr;                // the client's ip:port
  std::string name;                // its CLIENT SETNAME
};

class SlowLog {
 public:
  // Words kept of a command, and bytes of a word, as Redis keeps them: the last kept word
  // of a longer command says how many more there were, a longer word how many more bytes.
  static constexpr size_t kMaxWords = 32;
  static constexpr size_t kMaxWordBytes = 128;
  // Entries taken per second at most: past it a slow command is counted, not kept, so a node
  // already slow (every command past the threshold) does not spend more on its log.
  static constexpr int64_t kMaxPerSecond = 1000;

  LiveValue<int64_t> slower_than_us{10'000};  // slowlog-log-slower-than; < 0: none
  LiveValue<int64_t> max_len{128};            // slowlog-max-len

  // Whether a command that took `us` belongs in the log (cheap: an atomic load).
  bool slow(int64_t us) const {
    const int64_t t = slower_than_us.get();
    return t >= 0 && us >= t;
  }
  // Keeps one entry (words as sent; the caller redacts secrets first), unless this second's
  // allowance is spent. The oldest go past max_len.
  void add(const std::vector<std::string_view>& words, int64_t duration_us, int64_t unix_ms,
           std::string addr, std::string name);
  // Whether an entry made now would be kept (this second's allowance not spent): asked
  // before the words of a slow batch are read again. No lock: a node where every batch is
  // slow asks it once a batch.
  bool room(int64_t unix_ms) const {
    return unix_ms / 1000 != spent_second_.load(std::memory_order_relaxed);
  }
  // The newest `count` (< 0: all), newest first.
  std::vector<SlowEntry> newest(int64_t count) const;
  size_t size() const;
  void reset();
  uint64_t skipped() const;  // slow commands not kept for the allowance

 private:
  mutable std::mutex mu_;
  std::deque<SlowEntry> entries_;  // newest first
  int64_t next_id_ = 0;
  int64_t second_ = -1;  // the second the allowance counts in
  int64_t in_second_ = 0;
  uint64_t skipped_ = 0;
  std::atomic<int64_t> spent_second_{-1};  // the last second whose allowance was spent
};

}  // namespace fg
