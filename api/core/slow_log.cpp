#include "slow_log.hpp"

#include <algorithm>

namespace fg {

void SlowLog::add(const std::vector<std::string_view>& words, int64_t duration_us, int64_t unix_ms,
                  std::string addr, std::string name) {
  const int64_t keep = max_len.get();
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t second = unix_ms / 1000;
  if (second != second_) {
    second_ = second;
    in_second_ = 0;
  }
  if (in_second_ >= kMaxPerSecond) {
    ++skipped_;
    return;
  }
  if (++in_second_ == kMaxPerSecond) spent_second_.store(second, std::memory_order_relaxed);
  SlowEntry e;
  e.id = next_id_++;
  e.unix_s = second;
  e.duration_us = duration_us;
  const size_t n = std::min(words.size(), kMaxWords);
  e.words.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (n < words.size() && i == n - 1) {
      e.words.push_back("... (" + std::to_string(words.size() - n + 1) + " more arguments)");
    } else if (words[i].size() > kMaxWordBytes) {
      e.words.push_back(std::string(words[i].substr(0, kMaxWordBytes)) + "... (" +
                        std::to_string(words[i].size() - kMaxWordBytes) + " more bytes)");
    } else {
      e.words.emplace_back(words[i]);
    }
  }
  e.addr = std::move(addr);
  e.name = std::move(name);
  entries_.push_front(std::move(e));
  while (static_cast<int64_t>(entries_.size()) > std::max<int64_t>(keep, 0)) entries_.pop_back();
}

std::vector<SlowEntry> SlowLog::newest(int64_t count) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n =
      count < 0 ? entries_.size() : std::min(entries_.size(), static_cast<size_t>(count));
  return std::vector<SlowEntry>(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(n));
}

size_t SlowLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void SlowLog::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

uint64_t SlowLog::skipped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

}  // namespace fg
