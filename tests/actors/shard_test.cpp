// Shard logic without actors: kinds per key, WRONGTYPE, key cap, idle expiry, leases and
// holders, peek without creating keys.
#include "shard.hpp"

#include <gtest/gtest.h>

#include "data_op.hpp"
#include "hash_value.hpp"
#include "list_value.hpp"
#include "zset_value.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

ShardOp op(OpCode code, std::string_view key, LimitSpec spec = {}) {
  ShardOp o;
  o.code = code;
  o.key = key;
  o.hash = KeyTable::hash(key);
  o.spec = spec;
  return o;
}

const LimitSpec kBucket = LimitSpec::token_bucket(2, 1, kS);
const LimitSpec kLog = LimitSpec::window(Kind::kSlidingLog, 2, kS);

TEST(Shard, TakeConsumesAndPeekDoesNot) {
  Shard s(100, 1);
  auto p = op(OpCode::kPeek, "k", kBucket);
  s.execute(p, kT0);
  EXPECT_TRUE(p.decision.allowed);
  EXPECT_EQ(s.key_count(), 0u);  // peeking an absent key creates nothing
  for (int i = 0; i < 2; ++i) {
    auto t = op(OpCode::kTake, "k", kBucket);
    s.execute(t, kT0);
    EXPECT_TRUE(t.decision.allowed);
  }
  auto t = op(OpCode::kTake, "k", kBucket);
  s.execute(t, kT0);
  EXPECT_FALSE(t.decision.allowed);
  EXPECT_EQ(s.key_count(), 1u);
}

TEST(Shard, AKeyKeepsItsKindWhileLive) {
  Shard s(100, 1);
  auto a = op(OpCode::kTake, "k", kBucket);
  s.execute(a, kT0);
  auto b = op(OpCode::kTake, "k", kLog);
  s.execute(b, kT0);
  EXPECT_EQ(b.status, OpStatus::kWrongType);
  auto c = op(OpCode::kAcquire, "k", LimitSpec::concurrency(1, kS));
  c.ttl_ns = kS;
  s.execute(c, kT0);
  EXPECT_EQ(c.status, OpStatus::kWrongType);
  // Once the bucket is idle (full again) the key may change kind.
  auto d = op(OpCode::kTake, "k", kLog);
  s.execute(d, kT0 + 2 * kS);
  EXPECT_EQ(d.status, OpStatus::kOk);
  EXPECT_TRUE(d.decision.allowed);
}

TEST(Shard, KeyCapGivesAnErrorNotMemoryExhaustion) {
  Shard s(3, 1);
  for (std::string k : {"a", "b", "c"}) {
    auto t = op(OpCode::kTake, k, kBucket);
    s.execute(t, kT0);
    ASSERT_EQ(t.status, OpStatus::kOk);
  }
  auto t = op(OpCode::kTake, "d", kBucket);
  s.execute(t, kT0);
  EXPECT_EQ(t.status, OpStatus::kKeyLimit);
  auto again = op(OpCode::kTake, "a", kBucket);  // existing keys still work
  s.execute(again, kT0);
  EXPECT_EQ(again.status, OpStatus::kOk);
  // When the others go idle there is room again.
  auto later = op(OpCode::kTake, "d", kBucket);
  s.execute(later, kT0 + 5 * kS);
  EXPECT_EQ(later.status, OpStatus::kOk);
}

TEST(Shard, SweepReturnsIdleKeys) {
  ShardStats stats;
  Shard s(1000, 1, &stats);
  for (int i = 0; i < 500; ++i) {
    std::string k = "k" + std::to_string(i);
    auto t = op(OpCode::kTake, k, i < 100 ? kLog : LimitSpec::token_bucket(2, 1, 2 * kS));
    s.execute(t, kT0);
  }
  s.sweep(kT0 + kS / 2, 100000);
  EXPECT_EQ(s.key_count(), 500u);  // nothing idle yet
  s.sweep(kT0 + 1 * kS, 100000);
  EXPECT_EQ(s.key_count(), 400u);  // the logs emptied; the buckets refill until 2 s
  s.sweep(kT0 + 3 * kS, 100000);
  EXPECT_EQ(s.key_count(), 0u);
  EXPECT_EQ(stats.keys.load(), 0);
  EXPECT_EQ(stats.expired.load(), 500);
}

// Keys that go idle a tick after they were made, 60,000 new ones a 100 ms tick (a node taking
// 600k new keys a second, as random keys under load make it): the sweeper's pace follows the
// churn, so the table holds about two ticks of keys and no run of occupied
// slots grows long (a sweeper at a fixed pace falls behind, the table ahead of its cursor
// fills solid, and one probe or erase there walks tens of thousands of slots).
TEST(Shard, TheSweeperKeepsPaceWithChurn) {
  constexpr int64_t kTick = kS / 10;
  constexpr int kPerTick = 60000;
  constexpr size_t kBudget = 4096;
  Shard s(10'000'000, 1);
  const LimitSpec spec = LimitSpec::token_bucket(2, 1, kTick);  // full again a tick later
  size_t most_keys = 0, longest = 0;
  int next = 0;
  for (int tick = 0; tick < 40; ++tick) {
    const int64_t now = kT0 + tick * kTick;
    for (int i = 0; i < kPerTick; ++i) {
      const std::string k = "k:" + std::to_string(next++);
      auto t = op(OpCode::kTake, k, spec);
      s.execute(t, now);
      ASSERT_EQ(t.status, OpStatus::kOk);
    }
    s.sweep_tick(kBudget);
    int rounds = 0;
    while (s.sweep_round(now, kBudget)) ASSERT_LT(++rounds, 1000);
    most_keys = std::max(most_keys, s.key_count());
    longest = std::max(longest, s.table().longest_run());
  }
  EXPECT_LT(most_keys, 4u * kPerTick);
  EXPECT_LT(longest, 300u);
}

// The same churn with the rounds paid as a busy node pays them: one after each batch run in
// place (ShardPool::run_in_place), 40 batches a tick — fewer than the rounds a tick owes —
// and the actor paying at a tick only what the last one left unpaid, with the new tick's due
// (ShardActorImpl). What a tick leaves unpaid is owed on the next: the pace still follows
// the churn.
TEST(Shard, TheSweeperKeepsPaceWhenBatchesPayItsRounds) {
  constexpr int64_t kTick = kS / 10;
  constexpr int kBatches = 40, kPerBatch = 1500;
  constexpr size_t kBudget = 4096;
  Shard s(10'000'000, 1);
  const LimitSpec spec = LimitSpec::token_bucket(2, 1, kTick);
  size_t most_keys = 0, longest = 0;
  int next = 0;
  for (int tick = 0; tick < 40; ++tick) {
    const bool behind = s.sweep_owed();
    s.sweep_tick(kBudget);
    int rounds = 0;
    while (behind && s.sweep_round(kT0 + tick * kTick, kBudget)) ASSERT_LT(++rounds, 1000);
    for (int b = 0; b < kBatches; ++b) {
      const int64_t now = kT0 + tick * kTick + b * (kTick / kBatches);
      for (int i = 0; i < kPerBatch; ++i) {
        auto t = op(OpCode::kTake, "k:" + std::to_string(next++), spec);
        s.execute(t, now);
        ASSERT_EQ(t.status, OpStatus::kOk);
      }
      if (s.sweep_owed()) s.sweep_round(now, kBudget);
    }
    most_keys = std::max(most_keys, s.key_count());
    longest = std::max(longest, s.table().longest_run());
  }
  EXPECT_LT(most_keys, 4u * kBatches * kPerBatch);
  EXPECT_LT(longest, 300u);
}

// At the key cap, the whole table is swept for a new key only when the last such sweep freed
// plenty or is 100 ms old: a table of live keys is not swept whole again for every refusal.
TEST(Shard, AFullTableOfLiveKeysIsNotSweptPerRefusal) {
  constexpr int64_t kMs = kS / 1000;
  Shard s(1000, 1);
  const LimitSpec slow = LimitSpec::token_bucket(2, 1, 1000 * kS);
  const LimitSpec quick = LimitSpec::token_bucket(2, 1, 50 * kMs);  // idle 50 ms on
  for (int i = 0; i < 1000; ++i) {
    auto t = op(OpCode::kTake, "live:" + std::to_string(i), i < 10 ? quick : slow);
    s.execute(t, kT0);
    ASSERT_EQ(t.status, OpStatus::kOk);
  }
  auto a = op(OpCode::kTake, "new:a", slow);
  s.execute(a, kT0);  // swept: nothing idle
  EXPECT_EQ(a.status, OpStatus::kKeyLimit);
  auto b = op(OpCode::kTake, "new:b", slow);
  s.execute(b, kT0 + 60 * kMs);  // ten idle now, but the last sweep is 60 ms old and freed none
  EXPECT_EQ(b.status, OpStatus::kKeyLimit);
  auto c = op(OpCode::kTake, "new:c", slow);
  s.execute(c, kT0 + 101 * kMs);  // swept again: the ten go
  EXPECT_EQ(c.status, OpStatus::kOk);
  EXPECT_EQ(s.key_count(), 991u);
}

TEST(Shard, LeasesWithHoldersAndHeartbeat) {
  Shard s(100, 1);
  std::vector<uint64_t> ids;
  for (std::string k : {"conn:u1", "conn:u1", "conn:u2"}) {
    auto a = op(OpCode::kAcquire, k, LimitSpec::concurrency(2, 10 * kS));
    a.ttl_ns = 10 * kS;
    a.holder = "app-1";
    s.execute(a, kT0);
    ASSERT_TRUE(a.acquire.granted);
    ids.push_back(a.acquire.lease_id);
  }
  EXPECT_NE(ids[0], ids[1]);
  auto denied = op(OpCode::kAcquire, "conn:u1", LimitSpec::concurrency(2, 10 * kS));
  denied.ttl_ns = 10 * kS;
  s.execute(denied, kT0);
  EXPECT_FALSE(denied.acquire.granted);

  auto hb = op(OpCode::kHeartbeat, "");
  hb.holder = "app-1";
  hb.ttl_ns = 10 * kS;
  s.execute(hb, kT0 + 8 * kS);
  EXPECT_EQ(hb.value, 3);

  auto count = op(OpCode::kCount, "conn:u1");
  s.execute(count, kT0 + 15 * kS);
  EXPECT_EQ(count.value, 2);  // renewed at 8 s, live until 18 s

  auto rel = op(OpCode::kRelease, "conn:u1");
  rel.lease_id = ids[0];
  s.execute(rel, kT0 + 15 * kS);
  EXPECT_EQ(rel.value, 1);

  // No heartbeat after 8 s: everything lapses at 18 s and the keys go away.
  auto count2 = op(OpCode::kCount, "conn:u1");
  s.execute(count2, kT0 + 18 * kS);
  EXPECT_EQ(count2.value, 0);
  s.sweep(kT0 + 18 * kS, 1000);
  EXPECT_EQ(s.key_count(), 0u);
  auto hb2 = op(OpCode::kHeartbeat, "");
  hb2.holder = "app-1";
  hb2.ttl_ns = 10 * kS;
  s.execute(hb2, kT0 + 19 * kS);
  EXPECT_EQ(hb2.value, 0);
}

TEST(Shard, ResetForgetsAKey) {
  Shard s(100, 1);
  auto t = op(OpCode::kTake, "k", LimitSpec::token_bucket(1, 1, 60 * kS));
  s.execute(t, kT0);
  auto r = op(OpCode::kReset, "k");
  s.execute(r, kT0);
  EXPECT_EQ(r.value, 1);
  auto r2 = op(OpCode::kReset, "k");
  s.execute(r2, kT0);
  EXPECT_EQ(r2.value, 0);
  auto t2 = op(OpCode::kTake, "k", LimitSpec::token_bucket(1, 1, 60 * kS));
  s.execute(t2, kT0);
  EXPECT_TRUE(t2.decision.allowed);
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// Reservations (all-or-nothing checks): a reserve takes like FG.TAKE; commit keeps it,
// cancel and expiry give it back, for every rate-limit kind.
class Reservation : public ::testing::TestWithParam<LimitSpec> {};

int64_t remaining_after(Shard& s, const LimitSpec& spec, int64_t now) {
  auto p = op(OpCode::kPeek, "r", spec);
  s.execute(p, now);
  return p.decision.remaining;
}

ShardOp reserve(Shard& s, const LimitSpec& spec, int64_t now, int64_t ttl = kS) {
  auto r = op(OpCode::kReserve, "r", spec);
  r.cost = 2;
  r.ttl_ns = ttl;
  s.execute(r, now);
  return r;
}

TEST_P(Reservation, CancelGivesBackCommitKeeps) {
  const LimitSpec spec = GetParam();
  Shard s(100, 1);
  const int64_t full = remaining_after(s, spec, kT0);
  auto r = reserve(s, spec, kT0);
  ASSERT_TRUE(r.decision.allowed);
  ASSERT_NE(r.lease_id, 0u);
  EXPECT_EQ(s.open_reservations(), 1u);
  EXPECT_EQ(remaining_after(s, spec, kT0), full - 2);
  auto c = op(OpCode::kCancel, "r");
  c.lease_id = r.lease_id;
  s.execute(c, kT0);
  EXPECT_EQ(c.value, 1);
  EXPECT_EQ(remaining_after(s, spec, kT0), full);
  auto again = op(OpCode::kCancel, "r");  // a ticket is used once
  again.lease_id = r.lease_id;
  s.execute(again, kT0);
  EXPECT_EQ(again.value, 0);

  auto r2 = reserve(s, spec, kT0);
  auto k = op(OpCode::kCommit, "r");
  k.lease_id = r2.lease_id;
  s.execute(k, kT0);
  EXPECT_EQ(k.value, 1);
  EXPECT_EQ(s.open_reservations(), 0u);
  s.sweep(kT0 + 2 * kS / 10, 1000);  // nothing left to expire
  EXPECT_EQ(remaining_after(s, spec, kT0 + 1), full - 2);
}

TEST_P(Reservation, UncommittedExpiresAndComesBack) {
  const LimitSpec spec = GetParam();
  Shard s(100, 1);
  const int64_t full = remaining_after(s, spec, kT0);
  auto r = reserve(s, spec, kT0, kS / 10);
  ASSERT_TRUE(r.decision.allowed);
  s.sweep(kT0 + kS / 20, 1000);  // not yet
  EXPECT_EQ(s.open_reservations(), 1u);
  s.sweep(kT0 + kS / 10, 1000);  // the caller died: its reservation goes back
  EXPECT_EQ(s.open_reservations(), 0u);
  EXPECT_EQ(remaining_after(s, spec, kT0 + kS / 10), full);
  auto k = op(OpCode::kCommit, "r");  // too late to commit
  k.lease_id = r.lease_id;
  s.execute(k, kT0 + kS / 10);
  EXPECT_EQ(k.value, 0);
}

TEST_P(Reservation, ATicketOnlyWorksForItsKey) {
  const LimitSpec spec = GetParam();
  Shard s(100, 1);
  auto r = reserve(s, spec, kT0);
  auto c = op(OpCode::kCancel, "other");
  c.lease_id = r.lease_id;
  s.execute(c, kT0);
  EXPECT_EQ(c.value, 0);
  EXPECT_EQ(s.open_reservations(), 1u);
}

// A node that lost a key's slot (declared stale, its state handed to the new owner) and
// later got it back must not give back, when they expire, reservations it took before:
// the count it holds now is the one the other owner kept, which never had them apart.
TEST_P(Reservation, OnesOfASlotThatLeftAreNeverGivenBack) {
  const LimitSpec spec = GetParam();
  Shard s(100, 1);
  s.enable_ownership();
  SlotBits slot;
  slot.set(key_slot("r"));
  s.set_owned(slot, true);
  const int64_t full = remaining_after(s, spec, kT0);
  ASSERT_TRUE(reserve(s, spec, kT0, kS / 10).decision.allowed);  // never committed
  // (as the shard's actor hands slots over: their keys out, then the slots)
  std::vector<EntrySnapshot> state = s.extract([&](uint32_t x) { return slot.test(x); }, kT0, true);
  s.set_owned(slot, false);
  EXPECT_EQ(s.open_reservations(), 0u);
  // Back, with the count the other owner kept (the reservation, and two takes more).
  s.set_owned(slot, true);
  s.install(state);
  for (int i = 0; i < 2; ++i) {
    auto t = op(OpCode::kTake, "r", spec);
    s.execute(t, kT0 + 1);
    ASSERT_TRUE(t.decision.allowed);
  }
  s.sweep(kT0 + kS, 1000);  // past the reservation's expiry
  EXPECT_EQ(remaining_after(s, spec, kT0 + kS / 5), full - 4);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, Reservation,
                         ::testing::Values(LimitSpec::token_bucket(10, 10, 60 * kS),
                                           LimitSpec::gcra(9, 10, 60 * kS),
                                           LimitSpec::window(Kind::kFixedWindow, 10, 3600 * kS),
                                           LimitSpec::window(Kind::kSlidingWindow, 10, 3600 * kS),
                                           LimitSpec::window(Kind::kSlidingLog, 10, 60 * kS)));

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// Collections stop at their caps with a clear error, and a refused command changes nothing.
TEST(ShardData, CollectionsStopAtTheirCaps) {
  Shard s(100, 1);
  std::vector<std::string> many;
  for (size_t i = 0; i <= kMaxListElements; ++i) many.push_back(std::to_string(i));
  std::vector<std::string_view> push = {"rpush", "l"};
  push.insert(push.end(), many.begin(), many.end());
  DataReply r;
  EXPECT_EQ(data(s, DataCmd::kRPush, push, r).s, "ERR a list holds at most 100000 elements");
  EXPECT_EQ(s.key_count(), 0u);
  std::vector<std::string_view> hset = {"hset", "h"};
  for (size_t i = 0; i <= kMaxHashFields; ++i) hset.insert(hset.end(), {many[i], "v"});
  r.clear();
  EXPECT_EQ(data(s, DataCmd::kHSet, hset, r).s, "ERR a hash holds at most 10000 fields");
  EXPECT_EQ(s.key_count(), 0u);
  std::vector<std::string_view> zadd = {"zadd", "z"};
  for (size_t i = 0; i <= kMaxZSetMembers; ++i) zadd.insert(zadd.end(), {"1", many[i]});
  r.clear();
  EXPECT_EQ(data(s, DataCmd::kZAdd, zadd, r).s, "ERR a sorted set holds at most 100000 members");
  EXPECT_EQ(s.key_count(), 0u);
  // At the cap exactly, it fits.
  push.pop_back();
  r.clear();
  EXPECT_EQ(data(s, DataCmd::kRPush, push, r).n, static_cast<int64_t>(kMaxListElements));
  r.clear();
  OpStatus st;
  data(s, DataCmd::kGet, {"get", "l"}, r, &st);
  EXPECT_EQ(st, OpStatus::kWrongType);
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

constexpr int64_t kNow = 1'700'000'000'000'000'000;

// As data() above, at `now`, in transaction `abort` (if any); whether it ran.
struct Ran {
  DataReply r;
  OpStatus status = OpStatus::kOk;
};
Ran at(Shard& s, int64_t now, std::vector<std::string_view> words, DataCmd cmd,
       uint8_t* abort = nullptr) {
  Ran out;
  ShardOp o;
  o.code = OpCode::kData;
  o.data = cmd;
  o.key = words.size() > 1 ? words[1] : std::string_view();
  o.hash = KeyTable::hash(o.key);
  o.args = &words;
  o.reply = &out.r;
  o.abort = abort;
  s.run_op(o, now);
  out.status = o.status;
  return out;
}
int64_t watch(Shard& s, int64_t now, std::string_view key) {
  Ran w = at(s, now, {"watch", key}, DataCmd::kWatch);
  return w.r.items.size() == 2 ? w.r.items[1].n : 0;
}
// EXEC's check of `key` against `token`: 1 unchanged, 0 changed (and `abort` set).
int64_t check(Shard& s, int64_t now, std::string_view key, int64_t token, uint8_t* abort) {
  const std::string t = std::to_string(token);
  Ran c = at(s, now, {"exec", key, t}, DataCmd::kWatchCheck, abort);
  return c.r.items.empty() ? -1 : c.r.items[0].n;
}

// WATCH: a key's version moves on with every write, deletion and expiry (by access or by the
// sweep), and with a flush; not with reads, writes to other keys, or an expiry before WATCH.
// A failed check aborts the transaction's later ops.
TEST(ShardWatch, VersionsMoveOnWithEveryChangeOfTheKey) {
  Shard s(100, 7);
  uint8_t abort = 0;
  at(s, kNow, {"set", "k", "1"}, DataCmd::kSet);
  int64_t t = watch(s, kNow, "k");
  at(s, kNow, {"get", "k"}, DataCmd::kGet);
  at(s, kNow, {"incr", "other"}, DataCmd::kIncr);
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 1);
  EXPECT_EQ(abort, 0);

  t = watch(s, kNow, "k");
  at(s, kNow, {"incr", "k"}, DataCmd::kIncr);
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 0);
  EXPECT_EQ(abort, 1);
  Ran skipped = at(s, kNow, {"incr", "k"}, DataCmd::kIncr, &abort);
  EXPECT_TRUE(skipped.r.items.empty());  // not run
  EXPECT_EQ(at(s, kNow, {"get", "k"}, DataCmd::kGet).r.items[0].s, "2");

  abort = 0;
  t = watch(s, kNow, "absent");
  at(s, kNow, {"del", "absent"}, DataCmd::kDel);  // (nothing deleted: no change)
  EXPECT_EQ(check(s, kNow, "absent", t, &abort), 1);
  t = watch(s, kNow, "absent");
  at(s, kNow, {"set", "absent", "x"}, DataCmd::kSet);
  EXPECT_EQ(check(s, kNow, "absent", t, &abort), 0);

  // Live at WATCH, expired by EXEC (found on access, or by the sweep): changed.
  at(s, kNow, {"set", "e", "1", "px", "10"}, DataCmd::kSet);
  t = watch(s, kNow, "e");
  EXPECT_EQ(check(s, kNow + 1'000'000'000, "e", t, &abort), 0);
  at(s, kNow, {"set", "e", "1", "px", "10"}, DataCmd::kSet);
  t = watch(s, kNow, "e");
  s.sweep(kNow + 1'000'000'000, 1 << 20);
  EXPECT_EQ(check(s, kNow + 1'000'000'000, "e", t, &abort), 0);
  // Expired before WATCH: its going is no change.
  at(s, kNow, {"set", "e", "1", "px", "10"}, DataCmd::kSet);
  t = watch(s, kNow + 1'000'000'000, "e");
  EXPECT_EQ(check(s, kNow + 1'000'000'000, "e", t, &abort), 1);

  // FLUSHALL changes the keys it removes; a token from another shard never matches.
  t = watch(s, kNow, "k");
  at(s, kNow, {"flushall"}, DataCmd::kFlushAll);
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 0);
  EXPECT_EQ(s.key_count(), 0u);
  Shard other(100, 8);
  t = watch(other, kNow, "k");
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 0);
  // A check lets go of its watch: the same token is no good twice.
  t = watch(s, kNow, "k");
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 1);
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 0);
}

// Slots handed off (or taken in) change every watched key: the state was replaced.
TEST(ShardWatch, AHandOffChangesEveryWatchedKey) {
  Shard s(100, 7);
  uint8_t abort = 0;
  at(s, kNow, {"set", "k", "1"}, DataCmd::kSet);
  const int64_t t = watch(s, kNow, "k");
  s.extract([](uint32_t) { return false; }, kNow, true);
  EXPECT_EQ(check(s, kNow, "k", t, &abort), 0);
}

TEST(ShardWatch, FlushTakesOptionsAsRedisDoes) {
  Shard s(100, 7);
  EXPECT_EQ(at(s, kNow, {"flushall", "ASYNC"}, DataCmd::kFlushAll).r.items[0].s, "OK");
  EXPECT_EQ(at(s, kNow, {"flushdb", "sync"}, DataCmd::kFlushDb).r.items[0].s, "OK");
  EXPECT_EQ(at(s, kNow, {"flushall", "now"}, DataCmd::kFlushAll).r.items[0].s, "ERR syntax error");
  EXPECT_EQ(at(s, kNow, {"flushall", "sync", "async"}, DataCmd::kFlushAll).r.items[0].s,
            "ERR syntax error");
}

}  // namespace
}  // namespace fg
