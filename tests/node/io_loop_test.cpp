// run_io_loop (node/server.hpp): an I/O thread's loop, with and without io-idle-poll-us.
// Every wait is bounded; the loop runs on a thread of its own and must return once its
// context stops.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "server.hpp"

namespace fg {
namespace {

using namespace std::chrono_literals;

// Runs the loop on a thread; `join` waits (at most 10 s) for it to return.
struct LoopThread {
  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(ctx);
  NodeCounters counters;
  std::future<void> done;
  explicit LoopThread(std::chrono::nanoseconds idle_poll) {
    done = std::async(std::launch::async,
                      [this, idle_poll] { run_io_loop(ctx, idle_poll, counters); });
  }
  bool join() { return done.wait_for(10s) == std::future_status::ready; }
  ~LoopThread() {
    ctx.stop();
    if (done.valid()) done.wait();
  }
};

bool eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 1000; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return ok();
}

// Handlers posted from other threads and timers run, and the loop returns when its context
// is stopped from another thread (what Server::stop does), polling or not.
TEST(IoLoop, RunsHandlersAndTimersAndReturnsWhenStopped) {
  for (auto idle_poll : {0ns, std::chrono::nanoseconds(50us), std::chrono::nanoseconds(1ms)}) {
    LoopThread loop(idle_poll);
    std::atomic<int> ran{0};
    asio::steady_timer timer(loop.ctx, 5ms);
    timer.async_wait([&](asio::error_code ec) {
      if (!ec) ran += 10;
    });
    for (int i = 0; i < 5; ++i) {
      asio::post(loop.ctx, [&] { ++ran; });
      std::this_thread::sleep_for(2ms);
    }
    EXPECT_TRUE(eventually([&] { return ran == 15; })) << idle_poll.count() << " ns: " << ran;
    loop.ctx.stop();
    EXPECT_TRUE(loop.join()) << idle_poll.count() << " ns";
  }
}

// Without idle polling the loop is plain run(): nothing is counted.
TEST(IoLoop, WithoutIdlePollNothingIsCounted) {
  LoopThread loop(0ns);
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    asio::post(loop.ctx, [&] { ++ran; });
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_TRUE(eventually([&] { return ran == 3; }));
  EXPECT_EQ(loop.counters.idle_poll_hits.load(), 0u);
  EXPECT_EQ(loop.counters.idle_poll_misses.load(), 0u);
}

// A handler posted while the thread polls is found there (a hit: no sleep, no wake-up);
// one posted after the poll ran out wakes the sleeping thread (a miss before it).
TEST(IoLoop, WorkWithinThePollIsFoundAwakeAndLaterWorkWakesTheThread) {
  {
    LoopThread loop(10s);  // (the spin stops when the context does)
    std::atomic<int> ran{0};
    // Each post lands in the poll unless the loop thread was descheduled at that moment:
    // a few tries make one hit certain.
    for (int i = 0; i < 50 && loop.counters.idle_poll_hits == 0; ++i) {
      asio::post(loop.ctx, [&] { ++ran; });
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_GE(loop.counters.idle_poll_hits.load(), 1u);
    EXPECT_EQ(loop.counters.idle_poll_misses.load(), 0u);
    EXPECT_GE(ran.load(), 1);
    loop.ctx.stop();
    EXPECT_TRUE(loop.join());
  }
  {
    LoopThread loop(200us);
    ASSERT_TRUE(eventually([&] { return loop.counters.idle_poll_misses >= 1; }));
    std::atomic<bool> ran{false};
    asio::post(loop.ctx, [&] { ran = true; });
    EXPECT_TRUE(eventually([&] { return ran.load(); }));
    loop.ctx.stop();
    EXPECT_TRUE(loop.join());
  }
}

}  // namespace
}  // namespace fg
