// Moving state between shards by slot: a key that moved decides exactly as it would have
// had it stayed, for every limiter kind; other slots stay put; idle state is not shipped.
#include <gtest/gtest.h>

#include <map>

#include "key_slot.hpp"
#include "shard.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

ShardOp op(OpCode code, const std::string& key, LimitSpec spec = {}) {
  ShardOp o;
  o.code = code;
  o.key = key;
  o.hash = KeyTable::hash(key);
  o.spec = spec;
  o.ttl_ns = spec.kind == Kind::kConcurrency ? spec.c : 0;
  return o;
}

struct Case {
  std::string key;
  LimitSpec spec;
};

const std::vector<Case> kCases = {
    {"tb", LimitSpec::token_bucket(5, 1, kS)},
    {"gcra", LimitSpec::gcra(4, 1, kS)},
    {"fw", LimitSpec::window(Kind::kFixedWindow, 5, 10 * kS)},
    {"sw", LimitSpec::window(Kind::kSlidingWindow, 5, 10 * kS)},
    {"log", LimitSpec::window(Kind::kSlidingLog, 5, 10 * kS)},
    {"conn", LimitSpec::concurrency(5, 30 * kS)},
};

void hit(Shard& s, const Case& c, int64_t now, int times) {
  for (int i = 0; i < times; ++i) {
    auto o =
        op(c.spec.kind == Kind::kConcurrency ? OpCode::kAcquire : OpCode::kTake, c.key, c.spec);
    o.holder = "app-1";
    s.execute(o, now);
  }
}

// What the next few requests decide, as a comparable string.
std::string future(Shard& s, const Case& c, int64_t now) {
  std::string out;
  for (int step = 0; step < 8; ++step) {
    const int64_t t = now + int64_t{step} * 700'000'000;
    auto o =
        op(c.spec.kind == Kind::kConcurrency ? OpCode::kAcquire : OpCode::kTake, c.key, c.spec);
    s.execute(o, t);
    if (c.spec.kind == Kind::kConcurrency) {
      out += std::to_string(o.acquire.granted) + "/" + std::to_string(o.acquire.held) + " ";
    } else {
      out += std::to_string(o.decision.allowed) + "/" + std::to_string(o.decision.remaining) + "/" +
             std::to_string(o.decision.retry_after_ns) + " ";
    }
  }
  return out;
}

TEST(EntrySnapshot, MovedStateDecidesAsIfItHadStayed) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.key);
    Shard stayed(100, 1), source(100, 1), target(100, 2);
    hit(stayed, c, kT0, 3);
    hit(source, c, kT0, 3);
    const uint32_t slot = key_slot(c.key);
    auto moved = source.extract([&](uint32_t s) { return s == slot; }, kT0 + kS, true);
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(source.key_count(), 0u);
    target.install(moved);
    EXPECT_EQ(future(target, c, kT0 + kS), future(stayed, c, kT0 + kS));
  }
}

TEST(EntrySnapshot, OnlyTheChosenSlotsMoveAndCopiesLeaveTheSource) {
  Shard source(100, 1);
  for (const Case& c : kCases) hit(source, c, kT0, 2);
  const uint32_t slot = key_slot("log");
  auto copy = source.extract([&](uint32_t s) { return s == slot; }, kT0, false);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0].key, "log");
  EXPECT_EQ(copy[0].log.size(), 1u);  // two admissions at one instant: one entry, cost 2
  EXPECT_EQ(copy[0].log[0].second, 2);
  EXPECT_EQ(source.key_count(), kCases.size());  // a copy leaves everything in place
}

TEST(EntrySnapshot, IdleStateIsNotShipped) {
  Shard source(100, 1);
  hit(source, kCases[0], kT0, 1);  // bucket of 5, 1 per second: full again after 1 s
  auto moved = source.extract([](uint32_t) { return true; }, kT0 + 2 * kS, true);
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(source.key_count(), 0u);  // and it is gone from the source all the same
}

TEST(EntrySnapshot, LeasesMoveWithTheirHolders) {
  Shard source(100, 1), target(100, 2);
  hit(source, kCases[5], kT0, 2);
  target.install(source.extract([](uint32_t) { return true; }, kT0, true));
  auto hb = op(OpCode::kHeartbeat, "");
  hb.holder = "app-1";
  hb.ttl_ns = 30 * kS;
  target.execute(hb, kT0 + 20 * kS);
  EXPECT_EQ(hb.value, 2);  // the holder index came along
  auto count = op(OpCode::kCount, "conn");
  target.execute(count, kT0 + 45 * kS);
  EXPECT_EQ(count.value, 2);  // renewed at 20 s, so alive at 45 s
}

TEST(EntrySnapshot, MalformedSnapshotsAreSkipped) {
  Shard target(100, 1);
  EntrySnapshot bad;
  bad.key = "k";
  bad.kind = Kind::kFixedWindow;
  bad.fields = {1};  // needs two
  EntrySnapshot none;
  none.key = "n";
  target.install({bad, none});
  EXPECT_EQ(target.key_count(), 0u);
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// A copy taken a hash part at a time while the table changes between steps (keys come and
// go, the table grows through rehashes and shrinks): every key that lives throughout is in
// the copy exactly once.
TEST(EntrySnapshot, ACopyInPartsMissesNothingThatLivesThroughout) {
  for (uint32_t parts : {1u, 2u, 16u, 256u}) {
    SCOPED_TRACE(parts);
    Shard s(1'000'000, 1);
    const LimitSpec gcra = LimitSpec::gcra(5, 1, 60 * kS);
    auto take = [&](const std::string& k) {
      auto o = op(OpCode::kTake, k, gcra);
      s.execute(o, kT0);
    };
    for (int i = 0; i < 3000; ++i) take("stay:" + std::to_string(i));
    std::vector<EntrySnapshot> copy;
    for (uint32_t p = 0; p < parts; ++p) {
      s.copy_part(p, parts, kT0, copy);
      // Between steps: thousands of new keys (rehashes), and some of them erased again
      // (backward shifts move the entries that stay).
      for (int i = 0; i < 2000; ++i) take("churn:" + std::to_string(p) + ":" + std::to_string(i));
      for (int i = 0; i < 2000; i += 2) {
        auto o = op(OpCode::kReset, "churn:" + std::to_string(p) + ":" + std::to_string(i));
        s.execute(o, kT0);
      }
    }
    std::map<std::string, int> seen;
    for (const auto& e : copy) ++seen[e.key];
    for (int i = 0; i < 3000; ++i) EXPECT_EQ(seen["stay:" + std::to_string(i)], 1) << i;
    for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;  // nothing twice either
  }
}

}  // namespace
}  // namespace fg
