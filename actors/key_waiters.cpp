#include "key_waiters.hpp"

#include <algorithm>

namespace fg {

uint64_t KeyWaiters::add(const std::vector<std::string>& keys, Wake wake) {
  std::lock_guard<std::mutex> hold(mu_);
  const uint64_t t = next_ticket_++;
  for (const std::string& k : keys) {
    auto& list = by_key_[k];
    if (std::find(list.begin(), list.end(), t) == list.end()) list.push_back(t);
  }
  waiters_by_ticket_.emplace(t, Waiter{keys, std::move(wake)});
  waiters_.fetch_add(1, std::memory_order_relaxed);
  return t;
}

void KeyWaiters::remove(uint64_t ticket) {
  std::lock_guard<std::mutex> hold(mu_);
  auto it = waiters_by_ticket_.find(ticket);
  if (it == waiters_by_ticket_.end()) return;
  for (const std::string& k : it->second.keys) {
    auto list = by_key_.find(k);
    if (list == by_key_.end()) continue;
    auto& v = list->second;
    v.erase(std::remove(v.begin(), v.end(), ticket), v.end());
    if (v.empty()) by_key_.erase(list);
  }
  waiters_by_ticket_.erase(it);
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool KeyWaiters::wake(uint64_t ticket) {
  Wake w;
  {
    std::lock_guard<std::mutex> hold(mu_);
    auto it = waiters_by_ticket_.find(ticket);
    if (it == waiters_by_ticket_.end()) return false;
    w = it->second.wake;
  }
  w();
  return true;
}

void KeyWaiters::ready(std::string_view key, bool all) {
  std::vector<Wake> wakes;
  {
    std::lock_guard<std::mutex> hold(mu_);
    auto list = by_key_.find(std::string(key));
    if (list == by_key_.end()) return;
    // The longest-waiting few, who then go to the back of the line: each pop that leaves
    // elements changes the key again and wakes the next ones.
    auto& v = list->second;
    const size_t n = all ? v.size() : std::min(v.size(), kWakeAtOnce);
    for (size_t i = 0; i < n; ++i) wakes.push_back(waiters_by_ticket_.at(v[i]).wake);
    std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
  }
  for (const Wake& w : wakes) w();
}

}  // namespace fg
