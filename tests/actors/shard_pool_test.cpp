// Shard actors under CAF: a batch touching several shards completes once, in place.
#include "shard_pool.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

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

// Four shard actors under a CAF system of their own.
class ShardPools : public ::testing::Test {
 protected:
  static ShardPoolConfig four() {
    ShardPoolConfig pc;
    pc.shards = 4;
    return pc;
  }
  caf::actor_system_config cfg_;
  caf::actor_system sys_{cfg_};
  ManualClock clock_;
  ShardPool pool{sys_, four(), &clock_};
};

TEST_F(ShardPools, BatchAcrossShardsCompletesOnce) {
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

// A multi-shard step is atomic: transactions that add 1 to a counter on every shard, run
// from two threads with steps over overlapping sets of shards in both orders, are never
// seen half done by steps that read every counter; and nothing deadlocks.
TEST_F(ShardPools, StepsAcrossShardsAreAtomicAndNeverDeadlock) {
  // One key per shard.
  std::vector<std::string> keys(4);
  for (int i = 0, found = 0; found < 4; ++i) {
    std::string k = "c" + std::to_string(i);
    if (keys[pool.shard_of(k)].empty()) {
      keys[pool.shard_of(k)] = k;
      ++found;
    }
  }
  struct Job {
    std::shared_ptr<Batch> batch = std::make_shared<Batch>();
    std::deque<std::vector<std::string_view>> words;
    std::deque<DataReply> replies;
    void add(DataCmd c, std::string_view name, std::string_view key, uint16_t shard) {
      auto& w = words.emplace_back(std::vector<std::string_view>{name, key});
      ShardOp& op = batch->ops.emplace_back();
      op.code = OpCode::kData;
      op.data = c;
      op.key = key;
      op.shard = shard;
      op.args = &w;
      op.reply = &replies.emplace_back();
      batch->step_shards |= uint64_t{1} << shard;
    }
  };
  std::atomic<int> torn{0};
  auto worker = [&](bool reverse, int rounds) {
    for (int r = 0; r < rounds; ++r) {
      Job write, read;
      for (int k = 0; k < 4; ++k) {
        const int s = reverse ? 3 - k : k;
        if (r % 3 == 1 && (s == 0 || s == 2)) continue;  // (some steps span shards 1 and 3 only)
        write.add(DataCmd::kIncr, "incr", keys[static_cast<size_t>(s)], static_cast<uint16_t>(s));
      }
      for (int s = 0; s < 4; ++s) {
        read.add(DataCmd::kGet, "get", keys[static_cast<size_t>(s)], static_cast<uint16_t>(s));
      }
      for (Job* j : {&write, &read}) {
        auto sink = std::make_shared<WaitSink>();
        j->batch->sink = sink;
        pool.submit(j->batch);
        sink->wait(1);
      }
      // Shards 1 and 3 move together; shards 0 and 2 together.
      auto value = [&](int s) {
        const auto& it = read.replies[static_cast<size_t>(s)].items;
        return it.empty() || it[0].type != ReplyItem::Type::kBulk ? 0 : std::stoll(it[0].s);
      };
      if (value(1) != value(3) || value(0) != value(2)) ++torn;
    }
  };
  std::thread a(worker, false, 1500), b(worker, true, 1500);
  a.join();
  b.join();
  EXPECT_EQ(torn.load(), 0);
  Job last;
  for (int s = 0; s < 4; ++s)
    last.add(DataCmd::kGet, "get", keys[static_cast<size_t>(s)], static_cast<uint16_t>(s));
  auto sink = std::make_shared<WaitSink>();
  last.batch->sink = sink;
  pool.submit(last.batch);
  sink->wait(1);
  EXPECT_EQ(last.replies[1].items[0].s, "3000");
  EXPECT_EQ(last.replies[0].items[0].s, "2000");
}

}  // namespace
}  // namespace fg
