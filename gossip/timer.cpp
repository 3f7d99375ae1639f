#include "timer.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
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
// Every wait of the process, in one binary heap by (deadline, order of the wait): the order
// in which they fire. A wait ended early (cancelled, or its loop gone) leaves its heap entry
// behind, skipped when it comes up: its slot has moved on to another wait or none. A
// simulated node makes and cancels thousands of waits a second (each request's deadline,
// each replication round); a tree of nodes per wait and a second one by timer were a twentieth
// of the simulator's time.
struct Slot {
  uint64_t order = 0;  // the wait's; 0: free
  uint64_t timer = 0;
  const void* loop = nullptr;
  std::unique_ptr<detail::VirtualWait> w;
  uint32_t next_of_timer = kNone;  // the timer's next wait, in order of waiting
  static constexpr uint32_t kNone = UINT32_MAX;
};
struct Due {
  int64_t deadline;
  uint64_t order;
  uint32_t slot;
  bool operator>(const Due& o) const {
    return deadline != o.deadline ? deadline > o.deadline : order > o.order;
  }
};
struct Queue {
  std::mutex mu;
  std::vector<Due> heap;  // (std::push_heap with greater: the earliest on top)
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;
  std::unordered_map<uint64_t, uint32_t> first_of_timer;  // a timer's first live wait
  uint64_t next_wait = 0;
  uint64_t next_timer = 0;

  bool live(const Due& d) const { return slots[d.slot].order == d.order; }
  // Drops the entries of ended waits from the top, so the top is a live wait (or none).
  void trim() {
    while (!heap.empty() && !live(heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<Due>());
      heap.pop_back();
    }
  }
  // Takes a live wait out of its slot and of its timer's list.
  std::unique_ptr<detail::VirtualWait> take(uint32_t i) {
    Slot& s = slots[i];
    auto head = first_of_timer.find(s.timer);
    if (head != first_of_timer.end()) {
      if (head->second == i) {
        if (s.next_of_timer == Slot::kNone) {
          first_of_timer.erase(head);
        } else {
          head->second = s.next_of_timer;
        }
      } else {
        for (uint32_t p = head->second; p != Slot::kNone; p = slots[p].next_of_timer) {
          if (slots[p].next_of_timer == i) {
            slots[p].next_of_timer = s.next_of_timer;
            break;
          }
        }
      }
    }
    auto w = std::move(s.w);
    s = Slot{};
    free_slots.push_back(i);
    return w;
  }
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
    q.heap.clear();
    q.slots.clear();
    q.free_slots.clear();
    q.first_of_timer.clear();
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
  uint32_t i;
  if (!q.free_slots.empty()) {
    i = q.free_slots.back();
    q.free_slots.pop_back();
  } else {
    i = static_cast<uint32_t>(q.slots.size());
    q.slots.emplace_back();
  }
  Slot& s = q.slots[i];
  s.order = ++q.next_wait;
  s.timer = timer;
  s.loop = loop;
  s.w = std::move(w);
  s.next_of_timer = Slot::kNone;
  auto [head, first] = q.first_of_timer.try_emplace(timer, i);
  if (!first) {  // (rare: a timer waited on twice) last in its list
    uint32_t p = head->second;
    while (q.slots[p].next_of_timer != Slot::kNone) p = q.slots[p].next_of_timer;
    q.slots[p].next_of_timer = i;
  }
  q.heap.push_back(Due{deadline_ns, s.order, i});
  std::push_heap(q.heap.begin(), q.heap.end(), std::greater<Due>());
  // Ended waits far out (a request's deadline, cancelled when it was answered) would pile up
  // until their time: past four entries a live wait, the heap keeps only the live ones.
  const size_t live = q.slots.size() - q.free_slots.size();
  if (q.heap.size() > 1024 + 4 * live) {
    q.heap.erase(
        std::remove_if(q.heap.begin(), q.heap.end(), [&q](const Due& d) { return !q.live(d); }),
        q.heap.end());
    std::make_heap(q.heap.begin(), q.heap.end(), std::greater<Due>());
  }
}

void drop_loop(const void* loop) {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> gone;  // (destroyed unlocked)
  {
    std::lock_guard<std::mutex> lock(q.mu);
    for (uint32_t i = 0; i < q.slots.size(); ++i) {
      if (q.slots[i].order != 0 && q.slots[i].loop == loop) gone.push_back(q.take(i));
    }
  }
}

size_t cancel(uint64_t timer) {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> ended;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    auto head = q.first_of_timer.find(timer);
    if (head == q.first_of_timer.end()) return 0;
    for (uint32_t i = head->second; i != Slot::kNone;) {
      const uint32_t next = q.slots[i].next_of_timer;
      ended.push_back(std::move(q.slots[i].w));
      q.slots[i] = Slot{};
      q.free_slots.push_back(i);
      i = next;
    }
    q.first_of_timer.erase(head);
  }
  for (auto& w : ended) w->post(asio::error::operation_aborted);
  return ended.size();
}

bool next_deadline(int64_t& t) {
  Queue& q = queue();
  std::lock_guard<std::mutex> lock(q.mu);
  q.trim();
  if (q.heap.empty()) return false;
  t = q.heap.front().deadline;
  return true;
}

size_t fire_due() {
  Queue& q = queue();
  std::vector<std::unique_ptr<detail::VirtualWait>> due;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    const int64_t now = now_ns();
    for (q.trim(); !q.heap.empty() && q.heap.front().deadline <= now; q.trim()) {
      const uint32_t i = q.heap.front().slot;
      std::pop_heap(q.heap.begin(), q.heap.end(), std::greater<Due>());
      q.heap.pop_back();
      due.push_back(q.take(i));
    }
  }
  for (auto& w : due) w->post(asio::error_code());
  return due.size();
}

}  // namespace virtual_time
}  // namespace fg
