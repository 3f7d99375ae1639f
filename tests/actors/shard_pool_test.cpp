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
  std::thread::id by;  // the thread that finished it
  void batch_done() override {
    std::lock_guard<std::mutex> g(mu);
    ++done;
    by = std::this_thread::get_id();
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

// A batch for idle shards runs in place: done before submit returns, no message sent. One
// by message (in_place false) completes later, on the shard's actor, with the same result.
TEST_F(ShardPools, AnIdleShardRunsTheBatchInPlace) {
  std::vector<std::string> keys{"a", "b", "c", "d", "e", "f"};
  for (bool in_place : {true, false}) {
    auto sink = std::make_shared<WaitSink>();
    auto batch = std::make_shared<Batch>();
    batch->sink = sink;
    for (auto& k : keys) {
      ShardOp& op = batch->ops.emplace_back();
      op.key = k;
      op.shard = pool.shard_of(k);
      op.spec = LimitSpec::token_bucket(1, 1, 1'000'000'000);
    }
    pool.submit(batch, 0, in_place);
    if (in_place) {
      EXPECT_EQ(sink->done, 1);  // (nothing else runs these shards)
    }
    sink->wait(1);
    for (auto& op : batch->ops) EXPECT_EQ(op.decision.allowed, in_place) << op.key;
  }
}

// A shard parked in a step is never run in place: a batch for it waits for the step, and
// sees what the step did.
TEST_F(ShardPools, AParkedShardIsNotRunInPlace) {
  std::string k1, k3;  // a key of shard 1 and one of shard 3
  for (int i = 0; k1.empty() || k3.empty(); ++i) {
    std::string k = "p" + std::to_string(i);
    if (pool.shard_of(k) == 1 && k1.empty()) k1 = k;
    if (pool.shard_of(k) == 3 && k3.empty()) k3 = k;
  }
  std::vector<std::string_view> set1{"set", k1, "10"}, set3{"set", k3, "10"}, incr1{"incr", k1};
  DataReply r[3];
  auto op = [&](Batch& b, DataCmd c, std::string_view key, const std::vector<std::string_view>& w,
                DataReply& reply) {
    ShardOp& o = b.ops.emplace_back();
    o.code = OpCode::kData;
    o.data = c;
    o.key = key;
    o.shard = pool.shard_of(key);
    o.args = &w;
    o.reply = &reply;
  };
  auto step = std::make_shared<Batch>(), after = std::make_shared<Batch>();
  op(*step, DataCmd::kSet, k1, set1, r[0]);
  op(*step, DataCmd::kSet, k3, set3, r[1]);
  step->step_shards = (1u << 1) | (1u << 3);
  op(*after, DataCmd::kIncr, k1, incr1, r[2]);
  auto step_sink = std::make_shared<WaitSink>(), after_sink = std::make_shared<WaitSink>();
  step->sink = step_sink;
  after->sink = after_sink;

  std::unique_lock<std::mutex> hold3(pool.cell(3).gate);  // shard 3's actor cannot run
  pool.submit(step, 0, false);  // shard 1 parks, passes the step to shard 3, which waits
  for (bool parked = false; !parked; std::this_thread::yield()) {
    std::lock_guard<std::mutex> g(pool.cell(1).gate);
    parked = pool.cell(1).parked;
  }
  pool.submit(after);
  EXPECT_EQ(after_sink->done, 0);  // not run in place: shard 1 is in the step
  hold3.unlock();
  step_sink->wait(1);
  after_sink->wait(1);
  ASSERT_EQ(r[2].items.size(), 1u);
  EXPECT_EQ(r[2].items[0].n, 11);  // after the step's SET
}

// Runners in place do not starve the shard's actor: an actor that finds the gate held says
// it waits, and from then on nobody runs in place (their batches go to the actor, behind
// its own work) until it has had the gate.
TEST_F(ShardPools, AWaitingActorIsNotOvertakenInPlace) {
  ShardCell& cell = pool.cell(0);
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    if (pool.shard_of("w" + std::to_string(i)) == 0) key = "w" + std::to_string(i);
  }
  auto batch = [&](const std::shared_ptr<WaitSink>& sink) {
    auto b = std::make_shared<Batch>();
    b->sink = sink;
    ShardOp& op = b->ops.emplace_back();
    op.key = key;
    op.shard = 0;
    op.spec = LimitSpec::token_bucket(100, 1, 1'000'000'000);
    return b;
  };
  cell.gate.lock();  // as a runner in place would
  auto to_actor = std::make_shared<WaitSink>();
  pool.submit(batch(to_actor), 0, false);
  while (!cell.actor_waiting.load()) std::this_thread::yield();  // the actor said it waits
  cell.gate.unlock();
  to_actor->wait(1);
  EXPECT_FALSE(cell.actor_waiting.load());  // it had its turn
  // While it waits, a free gate is not taken in place; once it is through, it is.
  cell.actor_waiting.store(true);
  EXPECT_FALSE(cell.try_in_place());
  cell.actor_waiting.store(false);
  // The actor may still hold the gate for a moment (finishing its handler, a sweep tick):
  // a few tries, each of which fails only while someone really holds it.
  bool free_again = false;
  for (int i = 0; i < 500 && !(free_again = cell.try_in_place()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(free_again);
  cell.gate.unlock();
  bool ran_here = false;
  for (int i = 0; i < 50 && !ran_here; ++i) {
    auto in_place = std::make_shared<WaitSink>();
    pool.submit(batch(in_place));
    in_place->wait(1);
    std::lock_guard<std::mutex> g(in_place->mu);
    ran_here = in_place->by == std::this_thread::get_id();
  }
  EXPECT_TRUE(ran_here);  // the actor had its turn: in place again
}

// A multi-shard step is atomic: transactions that add 1 to a counter on every shard, run
// from two threads with steps over overlapping sets of shards in both orders, are never
// seen half done by steps that read every counter; and nothing deadlocks. Run with every
// batch in place where the shards are idle, with every batch through the actors, and with
// one thread of each (in-place steps and batches meeting actors parked in a step).
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
  auto worker = [&](bool reverse, int rounds, bool in_place) {
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
        pool.submit(j->batch, 0, in_place);
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
  const std::pair<bool, bool> modes[] = {{true, true}, {false, false}, {true, false}};
  for (auto [in_place_a, in_place_b] : modes) {
    std::thread a(worker, false, 500, in_place_a), b(worker, true, 500, in_place_b);
    a.join();
    b.join();
  }
  EXPECT_EQ(torn.load(), 0);
  Job last;
  for (int s = 0; s < 4; ++s)
    last.add(DataCmd::kGet, "get", keys[static_cast<size_t>(s)], static_cast<uint16_t>(s));
  auto sink = std::make_shared<WaitSink>();
  last.batch->sink = sink;
  pool.submit(last.batch);
  sink->wait(1);
  int every = 0, most = 0;  // rounds run: all of them touch shard 1, two of three shard 0
  for (int r = 0; r < 500; ++r) {
    every += 6;
    most += r % 3 == 1 ? 0 : 6;
  }
  EXPECT_EQ(last.replies[1].items[0].s, std::to_string(every));
  EXPECT_EQ(last.replies[0].items[0].s, std::to_string(most));
}

}  // namespace
}  // namespace fg
