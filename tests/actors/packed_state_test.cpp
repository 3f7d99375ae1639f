// The replication stream's packed records: what an owner's shard collects, applied on a
// replica's shard, leaves the replica holding exactly the owner's state (updates in place,
// a key changing kind, a deadline set and removed, a key gone); the kinds that hold
// collections travel as snapshots; a malformed or cut record is refused, never applied.
#include "packed_state.hpp"

#include <gtest/gtest.h>

#include "data_op.hpp"
#include "fixed_window.hpp"
#include "gcra.hpp"
#include "shard.hpp"
#include "sliding_window.hpp"
#include "token_bucket.hpp"

namespace fg {
namespace {

// The fixed-size limiters' states are exactly their integers, in order: what pack_entry
// copies as bytes.
static_assert(sizeof(TokenBucketState) == 8 && sizeof(GcraState) == 8);
static_assert(sizeof(FixedWindowState) == 16 && sizeof(SlidingWindowState) == 32);

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

SlotBits all_slots() {
  SlotBits b;
  b.set();
  return b;
}

struct Pair {
  Shard owner{1000, 1};
  Shard replica{1000, 2};
  Pair() {
    owner.enable_ownership();
    owner.set_owned(all_slots(), true);
    replica.enable_ownership();  // serves nothing: keeps copies
  }
  void take(const std::string& key, LimitSpec spec, int64_t now = kT0) {
    ShardOp o;
    o.code = OpCode::kTake;
    o.key = key;
    o.hash = KeyTable::hash(key);
    o.spec = spec;
    owner.execute(o, now);
  }
  void data(DataCmd cmd, std::vector<std::string_view> words) {
    DataReply r;
    fg::data(owner, cmd, std::move(words), r, nullptr, kT0);
  }
  // One replication round: what the owner collected, applied on the replica.
  ShardChanges round(int64_t now = kT0) {
    ShardChanges c;
    owner.collect_dirty(c, now);
    replica.apply_replica(c.snapshots, c.packed);
    return c;
  }
  // Every key of a shard as snapshots, by key.
  static std::map<std::string, EntrySnapshot> state(Shard& s) {
    std::map<std::string, EntrySnapshot> out;
    for (auto& e : s.extract([](uint32_t) { return true; }, kT0, false)) out[e.key] = e;
    return out;
  }
  void expect_same() {
    auto a = state(owner), b = state(replica);
    ASSERT_EQ(a.size(), b.size());
    for (auto& [k, e] : a) {
      SCOPED_TRACE(k);
      ASSERT_TRUE(b.count(k));
      EXPECT_TRUE(e == b[k]);
    }
  }
};

TEST(PackedState, AReplicaHoldsWhatTheOwnerHolds) {
  Pair p;
  p.take("tb", LimitSpec::token_bucket(5, 1, kS));
  p.take("gcra", LimitSpec::gcra(4, 1, kS));
  p.take("fw", LimitSpec::window(Kind::kFixedWindow, 5, 10 * kS));
  p.take("sw", LimitSpec::window(Kind::kSlidingWindow, 5, 10 * kS));
  p.take("log", LimitSpec::window(Kind::kSlidingLog, 5, 10 * kS));
  p.data(DataCmd::kIncr, {"incr", "counter"});
  p.data(DataCmd::kExpire, {"expire", "counter", "59"});
  const std::string big(300, 'x');
  p.data(DataCmd::kSet, {"set", "text", big});
  ShardChanges c = p.round();
  EXPECT_EQ(c.marks.size(), 6u);      // tb, gcra, fw, sw, counter, text
  EXPECT_EQ(c.snapshots.size(), 1u);  // the sliding log holds a collection
  EXPECT_EQ(c.snapshots[0].key, "log");
  for (const auto& m : c.marks) {
    PackedRecord r;
    ASSERT_TRUE(read_packed(std::string_view(c.packed).substr(m.offset, m.size), r));
    EXPECT_EQ(r.size, m.size);
    EXPECT_EQ(m.slot, key_slot(r.key));
  }
  p.expect_same();
  EXPECT_EQ(Pair::state(p.replica)["counter"].expires_ms,
            Pair::state(p.owner)["counter"].expires_ms);
  EXPECT_GT(Pair::state(p.replica)["counter"].expires_ms, 0);

  // A second round carries only what changed since, and updates the copies in place.
  p.take("tb", LimitSpec::token_bucket(5, 1, kS));
  p.data(DataCmd::kIncr, {"incr", "counter"});
  p.data(DataCmd::kPersist, {"persist", "counter"});     // the deadline goes
  p.data(DataCmd::kSet, {"set", "fw", "now a string"});  // a key changes kind
  p.data(DataCmd::kDel, {"del", "gcra"});                // a key goes
  c = p.round();
  EXPECT_EQ(c.marks.size(), 4u);
  p.expect_same();
  EXPECT_EQ(Pair::state(p.replica)["counter"].expires_ms, 0);
  EXPECT_EQ(Pair::state(p.replica)["counter"].value, "2");
  EXPECT_EQ(Pair::state(p.replica)["fw"].kind, Kind::kString);
  EXPECT_EQ(Pair::state(p.replica).count("gcra"), 0u);

  // Nothing changed: an empty round.
  c = p.round();
  EXPECT_TRUE(c.packed.empty());
  EXPECT_TRUE(c.marks.empty());
}

// A window taken just before it ends and collected just after is gone for the replica; the
// same entry, taken again in the next window, must reach the replica again (it stayed
// marked as changed, unlisted, and every later take was dropped from the stream: a failover
// then lost the new window's count).
TEST(PackedState, AWindowThatEndedBeforeItsRoundIsSentAgainWhenTakenAgain) {
  for (const LimitSpec& spec : {LimitSpec::window(Kind::kFixedWindow, 5, 10 * kS),
                                LimitSpec::window(Kind::kSlidingWindow, 5, 10 * kS)}) {
    Pair p;
    const int64_t end = (kT0 / (10 * kS) + 1) * (10 * kS);  // the window's end
    p.take("w", spec, end - kS / 1000);
    for (int64_t t = end + kS; t < end + 60 * kS; t += 10 * kS) {
      p.round(t);  // (first: the window has ended, the key is idle: gone for the replica)
      p.take("w", spec, t + kS / 1000);
      ShardChanges c = p.round(t + kS / 100);
      EXPECT_EQ(c.marks.size(), 1u) << "a take " << (t - end) / kS << " s after the end";
      EXPECT_EQ(Pair::state(p.replica).count("w"), 1u);
    }
  }
}

// More changed keys than a round lists: the round asks for whole copies, and every key's
// next change is listed again (the keys past the list kept their marks, unlisted, and were
// never sent again).
TEST(PackedState, KeysPastARoundsListAreListedAgainWhenTheyChange) {
  Pair p;
  p.owner.set_max_dirty(2);
  const LimitSpec spec = LimitSpec::token_bucket(5, 1, kS);
  for (const char* k : {"a", "b", "c", "d"}) p.take(k, spec);
  ShardChanges c = p.round();
  EXPECT_FALSE(c.complete);
  EXPECT_EQ(c.marks.size(), 2u);
  for (const char* k : {"a", "b", "c", "d"}) {
    p.take(k, spec);
    c = p.round();
    EXPECT_TRUE(c.complete);
    ASSERT_EQ(c.marks.size(), 1u) << k;
  }
}

TEST(PackedState, ARecordForASlotTheReplicaServesIsNotApplied) {
  Pair p;
  p.data(DataCmd::kSet, {"set", "mine", "owner's"});
  ShardChanges c;
  p.owner.collect_dirty(c, kT0);
  SlotBits served;
  served.set(key_slot("mine"));
  p.replica.set_owned(served, true);  // the replica decides this slot itself now
  p.replica.apply_replica({}, c.packed);
  EXPECT_EQ(p.replica.key_count(), 0u);
}

TEST(PackedState, MalformedRecordsAreRefused) {
  Pair p;
  p.take("tb", LimitSpec::token_bucket(5, 1, kS));
  p.data(DataCmd::kSet, {"set", "text", "hello world"});
  ShardChanges c;
  p.owner.collect_dirty(c, kT0);
  ASSERT_EQ(c.marks.size(), 2u);
  for (const auto& m : c.marks) {
    const std::string rec = c.packed.substr(m.offset, m.size);
    PackedRecord r;
    ASSERT_TRUE(read_packed(rec, r));
    for (size_t n = 0; n < rec.size(); ++n) {
      EXPECT_FALSE(read_packed(std::string_view(rec).substr(0, n), r)) << "cut at " << n;
    }
    std::string bad = rec;
    bad[0] = static_cast<char>(static_cast<uint8_t>(kLastKind) + 1);  // unknown kind
    EXPECT_FALSE(read_packed(bad, r));
    bad = rec;
    bad[0] = static_cast<char>(Kind::kSlidingLog);  // a kind that is never packed
    EXPECT_FALSE(read_packed(bad, r));
    bad = rec;
    const size_t deadline_at = 3 + r.key.size();
    bad[deadline_at + 7] = static_cast<char>(0x80);  // a negative deadline
    EXPECT_FALSE(read_packed(bad, r));
  }
  std::string long_key;
  pack_gone(std::string(kMaxKeyLen, 'k'), long_key);
  PackedRecord r;
  EXPECT_TRUE(read_packed(long_key, r));
  long_key[1] = static_cast<char>((kMaxKeyLen + 1) & 0xff);
  long_key[2] = static_cast<char>((kMaxKeyLen + 1) >> 8);
  long_key.push_back('k');
  EXPECT_FALSE(read_packed(long_key, r));  // longer than a key may be
  // A string's integer flag is 0 or 1.
  ShardChanges s;
  Pair q;
  q.data(DataCmd::kIncr, {"incr", "n"});
  q.owner.collect_dirty(s, kT0);
  std::string bad = s.packed;
  bad[3 + 1 + 8] = 2;
  EXPECT_FALSE(read_packed(bad, r));
}

}  // namespace
}  // namespace fg
