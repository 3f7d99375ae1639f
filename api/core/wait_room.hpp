// The takes that wait on this node (FG.TAKE ... WAIT): each holds its connection's replies
// until its admission is due. Bounded per node and per key (max-waiters,
// max-waiters-per-key) so that a tenant cannot park unbounded work here or take every place
// on one hot key; a waiter past either bound has its place given back and is answered an
// error. Counted where the client is connected (the node that holds the reply).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "accounts.hpp"

namespace fg {

class WaitRoom {
 public:
  void set_limits(int64_t per_node, int64_t per_key) {
    per_node_.store(per_node, std::memory_order_relaxed);
    per_key_.store(per_key, std::memory_order_relaxed);
  }
  // Where each user's waiters are counted, against its share (null: nowhere).
  void set_accounts(Accounts* a) { accounts_ = a; }
  // Takes a place for a waiter on `key`, of the user whose account is `account`; false
  // when a bound is reached (the node's, the key's, or the user's share of the node's).
  bool enter(std::string_view key, uint16_t account) {
    std::lock_guard lock(mu_);
    if (total_ >= per_node_.load(std::memory_order_relaxed)) return false;
    if (accounts_ && !accounts_->room(account, Accounts::kWaiters)) return false;
    auto it = keys_.find(std::string(key));
    if (it != keys_.end() && it->second >= per_key_.load(std::memory_order_relaxed)) return false;
    if (it == keys_.end()) it = keys_.emplace(std::string(key), 0).first;
    ++it->second;
    ++total_;
    if (accounts_) accounts_->add(account, Accounts::kWaiters, 1);
    waiting_.store(total_, std::memory_order_relaxed);
    return true;
  }
  void leave(std::string_view key, uint16_t account) {
    std::lock_guard lock(mu_);
    auto it = keys_.find(std::string(key));
    if (it == keys_.end()) return;
    if (--it->second == 0) keys_.erase(it);
    --total_;
    if (accounts_) accounts_->add(account, Accounts::kWaiters, -1);
    waiting_.store(total_, std::memory_order_relaxed);
  }
  int64_t waiting() const { return waiting_.load(std::memory_order_relaxed); }  // (INFO)

 private:
  std::mutex mu_;
  int64_t total_ = 0;
  std::unordered_map<std::string, int64_t> keys_;
  std::atomic<int64_t> per_node_{10000};
  std::atomic<int64_t> per_key_{1000};
  std::atomic<int64_t> waiting_{0};
  Accounts* accounts_ = nullptr;
};

}  // namespace fg
