#include "timer.hpp"

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace fg {
namespace detail {
std::atomic<bool> g_virtual_time{false};
std::atomic<int64_t> g_virtual_now_ns{0};

asio::execution_context::id VirtualTimerService::id;

void VirtualTimerService::shutdown() { virtual_time::drop_loop(&context()); }
}  // namespace detail

namespace virtual_time {
namespace {
struct Wait {
  uint64_t timer;
  const void* loop;
  std::unique_ptr<detail::VirtualWait> w;
};
struct Queue {
  std::mutex mu;
  // (deadline, order of the wait) -> the wait
  std::map<std::pair<int64_t, uint64_t>, Wait> waits;
  std::multimap<uint64_t, std::pair<int64_t, uint64_t>> by_timer;
  uint64_t next_wait = 0;
  uint64_t next_timer = 0;
};
Queue& queue() {
  static Queue q;
  return q;
}
}  // namespace

void enable(int64_t start_ns) {
  Queue& q = queue();
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.waits.clear();
    q.by_timer.clear();
  }
  detail::g_virtual_now_ns.store(start_ns);
  detail::g_virtual_time.store(true);
}

bool enabled() { return detail::g_virtual_time.load(std::memory_order_relaxed); }

int64_t now_ns() { return detail::g_virtual_now_ns.load(std::memory_order_relaxed); }

void set_ns(int64_t t) { detail::g_virtual_now_ns.store(t, std::memory_order_relaxed); }

uint64_t new_timer_id() {
  Queue& q = queue();
  std::lock_guard<std::mutex> lock(q.mu);
  return ++q.next_timer;
}

void wait(uint64_t timer, const void* loop, int64_t deadline_ns,
          std::unique_ptr<detail::VirtualWait> w) {
  Queue& q = queue();
  std::lock_guard<std::mutex> lock(q.mu);
  const auto key = std::make_pair(deadline_ns, q.next_wait++);
  q.waits.emplace(key, Wait{timer, loop, std::move(w)});
  q.by_timer.emplace(timer, key);
}

void drop_loop(const void* loop) {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> gone;  // (destroyed unlocked)
  {
    std::lock_guard<std::mutex> lock(q.mu);
    for (auto it = q.waits.begin(); it != q.waits.end();) {
      if (it->second.loop != loop) {
        ++it;
        continue;
      }
      auto [from, to] = q.by_timer.equal_range(it->second.timer);
      for (auto b = from; b != to; ++b) {
        if (b->second == it->first) {
          q.by_timer.erase(b);
          break;
        }
      }
      gone.push_back(std::move(it->second.w));
      it = q.waits.erase(it);
    }
  }
}

size_t cancel(uint64_t timer) {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> ended;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    auto [from, to] = q.by_timer.equal_range(timer);
    for (auto it = from; it != to; ++it) {
      auto w = q.waits.find(it->second);
      if (w == q.waits.end()) continue;
      ended.push_back(std::move(w->second.w));
      q.waits.erase(w);
    }
    q.by_timer.erase(from, to);
  }
  for (auto& w : ended) w->post(asio::error::operation_aborted);
  return ended.size();
}

bool next_deadline(int64_t& t) {
  Queue& q = queue();
  std::lock_guard<std::mutex> lock(q.mu);
  if (q.waits.empty()) return false;
  t = q.waits.begin()->first.first;
  return true;
}

size_t fire_due() {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> due;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    const int64_t now = now_ns();
    while (!q.waits.empty() && q.waits.begin()->first.first <= now) {
      auto it = q.waits.begin();
      const uint64_t timer = it->second.timer;
      auto [from, to] = q.by_timer.equal_range(timer);
      for (auto b = from; b != to; ++b) {
        if (b->second == it->first) {
          q.by_timer.erase(b);
          break;
        }
      }
      due.push_back(std::move(it->second.w));
      q.waits.erase(it);
    }
  }
  for (auto& w : due) w->post(asio::error_code());
  return due.size();
}

}  // namespace virtual_time
}  // namespace fg
