// Shard actors under CAF: a batch touching several shards completes once, in place.
#include "shard_pool.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

namespace fg {
namespace {

struct WaitSink : BatchSink {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  void batch_done() override {
    std::lock_guard<std::mutex> g(mu);
    ++done;
    cv.notify_all();
  }
  void wait(int n) {
    std::unique_lock<std::mutex> g(mu);
    ASSERT_TRUE(cv.wait_for(g, std::chrono::seconds(10), [&] { return done >= n; }));
  }
};

TEST(ShardPool, BatchAcrossShardsCompletesOnce) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  ManualClock clock;
  ShardPoolConfig pc;
  pc.shards = 4;
  ShardPool pool(sys, pc, &clock);
  auto sink = std::make_shared<WaitSink>();
  auto batch = std::make_shared<Batch>();
  batch->sink = sink;
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i) keys.push_back("k" + std::to_string(i % 8));
  for (auto& k : keys) {
    ShardOp& op = batch->ops.emplace_back();
    op.key = k;
    op.hash = KeyTable::hash(k);
    op.shard = pool.shard_of(k);
    op.spec = LimitSpec::token_bucket(8, 1, 1'000'000'000);
  }
  pool.submit(batch);
  sink->wait(1);
  EXPECT_EQ(sink->done, 1);
  int allowed = 0;
  for (auto& op : batch->ops) allowed += op.decision.allowed ? 1 : 0;
  EXPECT_EQ(allowed, 64);  // 8 keys x 8 tokens
  EXPECT_EQ(pool.keys(), 8);

  // Same batch again: every key is now empty.
  batch->sink = sink;
  pool.submit(batch);
  sink->wait(2);
  for (auto& op : batch->ops) EXPECT_FALSE(op.decision.allowed);
}

}  // namespace
}  // namespace fg
