// Merging a copy that comes back into the serving one: conservative for every limiter kind
// (what either side admitted stays admitted), exact for logs and leases, a no-op for a copy
// of the same history, and the data types by the rules merge.hpp states.
#include "merge.hpp"

#include <gtest/gtest.h>

#include "data_op.hpp"
#include "key_slot.hpp"
#include "shard.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;
const SlotBits kAllFresh = SlotBits().set();  // (every slot started here from nothing)

struct Case {
  std::string key;
  LimitSpec spec;
};

const std::vector<Case> kCases = {
    {"tb", LimitSpec::token_bucket(6, 1, 60 * kS)},
    {"gcra", LimitSpec::gcra(5, 1, 60 * kS)},
    {"fw", LimitSpec::window(Kind::kFixedWindow, 6, 600 * kS)},
    {"sw", LimitSpec::window(Kind::kSlidingWindow, 6, 600 * kS)},
    {"log", LimitSpec::window(Kind::kSlidingLog, 6, 600 * kS)},
    {"conn", LimitSpec::concurrency(6, 600 * kS)},
};

bool take(Shard& s, const Case& c, int64_t now) {
  ShardOp o;
  o.code = c.spec.kind == Kind::kConcurrency ? OpCode::kAcquire : OpCode::kTake;
  o.key = c.key;
  o.hash = KeyTable::hash(c.key);
  o.spec = c.spec;
  o.ttl_ns = c.spec.kind == Kind::kConcurrency ? c.spec.c : 0;
  o.holder = "app";
  s.execute(o, now);
  return c.spec.kind == Kind::kConcurrency ? o.acquire.granted : o.decision.allowed;
}

int takes(Shard& s, const Case& c, int64_t now, int n) {
  int ok = 0;
  for (int i = 0; i < n; ++i) ok += take(s, c, now + i) ? 1 : 0;
  return ok;
}

std::vector<EntrySnapshot> copy_of(Shard& s) {
  return s.extract([](uint32_t) { return true; }, kT0 + 10 * kS, false);
}

// How many more the shard would admit now (on a copy of it, so nothing is spent).
int room(Shard& s, const Case& c, int64_t now) {
  Shard probe(100, 9);
  probe.install(s.extract([](uint32_t) { return true; }, now, false));
  return takes(probe, c, now, 20);
}

TEST(Merge, EveryLimiterKeepsWhatEitherSideAdmitted) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.key);
    // A common history of 2, then each side admits on its own: one 2 more, the other 1.
    Shard base(100, 1);
    ASSERT_EQ(takes(base, c, kT0, 2), 2);
    Shard a(100, 0x1111111111), b(100, 0x2222222222);  // (seeds far apart: lease ids differ)
    a.install(copy_of(base));
    b.install(copy_of(base));
    ASSERT_EQ(takes(a, c, kT0 + kS, 2), 2);
    ASSERT_EQ(takes(b, c, kT0 + 2 * kS, 1), 1);
    const int64_t now = kT0 + 5 * kS;
    const int room_a = room(a, c, now);
    const int room_b = room(b, c, now);
    auto back = copy_of(b);
    std::vector<EntrySnapshot> refused;
    EXPECT_LE(a.merge(back, now, refused, kAllFresh), 1u);  // (0 where our side already says more)
    EXPECT_TRUE(refused.empty());
    const int merged = room(a, c, now);
    // Never more room than either side had; logs and leases keep both sides' admissions.
    EXPECT_LE(merged, std::min(room_a, room_b));
    if (c.spec.kind == Kind::kSlidingLog || c.spec.kind == Kind::kConcurrency) {
      EXPECT_EQ(merged, 6 - 5);  // 2 common + 2 + 1
    }
  }
}

TEST(Merge, ACopyOfTheSameHistoryChangesNothing) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.key);
    Shard a(100, 1);
    ASSERT_EQ(takes(a, c, kT0, 3), 3);
    auto same = copy_of(a);
    const int before = room(a, c, kT0 + kS);
    std::vector<EntrySnapshot> refused;
    EXPECT_EQ(a.merge(same, kT0 + kS, refused, kAllFresh), 0u);
    EXPECT_EQ(room(a, c, kT0 + kS), before);
  }
}

TEST(Merge, AnOlderCopyNeverUndoesNewerAdmissions) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.key);
    Shard a(100, 1);
    ASSERT_EQ(takes(a, c, kT0, 1), 1);
    auto old = copy_of(a);
    ASSERT_EQ(takes(a, c, kT0 + kS, 3), 3);
    const int before = room(a, c, kT0 + 2 * kS);
    std::vector<EntrySnapshot> refused;
    EXPECT_EQ(a.merge(old, kT0 + 2 * kS, refused, kAllFresh), 0u);
    EXPECT_EQ(room(a, c, kT0 + 2 * kS), before);
  }
}

TEST(Merge, AbsentKeysAreInstalledAndOtherSlotsRefused) {
  Shard a(100, 1);
  a.enable_ownership();
  SlotBits mine;
  mine.set(key_slot("tb"));
  a.set_owned(mine, true);
  Shard b(100, 2);
  ASSERT_EQ(takes(b, kCases[0], kT0, 4), 4);
  ASSERT_EQ(takes(b, kCases[1], kT0, 2), 2);
  auto back = copy_of(b);
  std::vector<EntrySnapshot> refused;
  EXPECT_EQ(a.merge(back, kT0 + kS, refused, kAllFresh), 1u);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key, "gcra");  // not served here: its owner is elsewhere
  EXPECT_EQ(a.key_count(), 1u);
  EXPECT_EQ(room(a, kCases[0], kT0 + kS), room(b, kCases[0], kT0 + kS));
}

// Leases go only into slots started here from nothing: a copy served here since before is
// complete (grants and releases are replicated before they are acknowledged), and a lease
// it lacks was refused or released — taking it back would let its holder's heartbeat keep
// it forever.
TEST(Merge, LeasesComeBackOnlyIntoSlotsStartedFromNothing) {
  const Case& c = kCases[5];
  Shard back_side(100, 0x3333333333);
  ASSERT_EQ(takes(back_side, c, kT0, 2), 2);
  for (bool fresh : {false, true}) {
    SCOPED_TRACE(fresh);
    Shard a(100, 0x4444444444);
    auto copy = copy_of(back_side);
    std::vector<EntrySnapshot> refused;
    SlotBits slots;
    if (fresh) slots.set(key_slot(c.key));
    EXPECT_EQ(a.merge(copy, kT0 + kS, refused, slots), fresh ? 1u : 0u);
    EXPECT_EQ(room(a, c, kT0 + kS), fresh ? 4 : 6);
  }
}

TEST(Merge, AnotherKindKeepsTheServingCopy) {
  Shard a(100, 1), b(100, 2);
  ASSERT_EQ(takes(a, kCases[0], kT0, 1), 1);
  DataReply r;
  data(b, DataCmd::kSet, {"SET", "tb", "hello"}, r);
  auto back = copy_of(b);
  std::vector<EntrySnapshot> refused;
  EXPECT_EQ(a.merge(back, kT0 + kS, refused, kAllFresh), 0u);
  EXPECT_EQ(copy_of(a)[0].kind, Kind::kTokenBucket);
}

EntrySnapshot str(const std::string& v, int64_t expires_ms = 0) {
  EntrySnapshot s;
  s.key = "k";
  s.kind = Kind::kString;
  s.value = v;
  s.expires_ms = expires_ms;
  return s;
}

TEST(Merge, StringsCountersTakeTheLargerAndOtherValuesStay) {
  EntrySnapshot a = str("41");
  EXPECT_TRUE(merge_snapshot(a, str("42")));
  EXPECT_EQ(a.value, "42");
  EXPECT_FALSE(merge_snapshot(a, str("7")));
  EXPECT_EQ(a.value, "42");
  EntrySnapshot t = str("hello");
  EXPECT_FALSE(merge_snapshot(t, str("99")));
  EXPECT_EQ(t.value, "hello");
  EntrySnapshot n = str("-5");
  EXPECT_FALSE(merge_snapshot(n, str("x")));
  EXPECT_EQ(n.value, "-5");
}

TEST(Merge, DeadlinesSurviveFromEitherSide) {
  EntrySnapshot a = str("1");
  EXPECT_TRUE(merge_snapshot(a, str("1", 5000)));  // the EXPIRE one side saw
  EXPECT_EQ(a.expires_ms, 5000);
  EXPECT_TRUE(merge_snapshot(a, str("1", 9000)));  // both: the later
  EXPECT_EQ(a.expires_ms, 9000);
  EXPECT_FALSE(merge_snapshot(a, str("1", 0)));
  EXPECT_EQ(a.expires_ms, 9000);
}

TEST(Merge, HashesAndSortedSetsTakeTheUnion) {
  EntrySnapshot h;
  h.key = "h";
  h.kind = Kind::kHash;
  h.hash = {{"tokens", "3"}, {"name", "a"}};
  EntrySnapshot g = h;
  g.hash = {{"tokens", "5"}, {"name", "b"}, {"ts", "100"}};
  EXPECT_TRUE(merge_snapshot(h, g));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"tokens", "5"}, {"name", "a"}, {"ts", "100"}};
  EXPECT_EQ(h.hash, want);

  EntrySnapshot z;
  z.key = "z";
  z.kind = Kind::kZSet;
  z.zset = {{"r1", 10}, {"r2", 20}};
  EntrySnapshot y = z;
  y.zset = {{"r2", 15}, {"r3", 30}, {"r0", 5}};
  EXPECT_TRUE(merge_snapshot(z, y));
  const std::vector<std::pair<std::string, double>> wz = {
      {"r0", 5}, {"r1", 10}, {"r2", 20}, {"r3", 30}};
  EXPECT_EQ(z.zset, wz);
  EXPECT_FALSE(merge_snapshot(z, y));

  EntrySnapshot l;
  l.key = "l";
  l.kind = Kind::kList;
  l.list = {"a"};
  EntrySnapshot m = l;
  m.list = {"b", "c"};
  EXPECT_FALSE(merge_snapshot(l, m));  // the serving list stays
  EXPECT_EQ(l.list, std::vector<std::string>{"a"});

  EntrySnapshot s;  // sets: the union (an add on either side stays)
  s.key = "s";
  s.kind = Kind::kSet;
  s.list = {"u1", "u2"};
  EntrySnapshot t = s;
  t.list = {"u3", "u1"};
  EXPECT_TRUE(merge_snapshot(s, t));
  EXPECT_EQ(s.list, (std::vector<std::string>{"u1", "u2", "u3"}));
  EXPECT_FALSE(merge_snapshot(s, t));
}

TEST(Merge, WindowsOneBehindKeepTheirCount) {
  // sliding window {start, window, curr, prev}: theirs is a window ahead of ours.
  EntrySnapshot a;
  a.key = "sw";
  a.kind = Kind::kSlidingWindow;
  a.fields = {1000, 100, 7, 0};
  EntrySnapshot b = a;
  b.fields = {1100, 100, 2, 3};
  EXPECT_TRUE(merge_snapshot(a, b));
  EXPECT_EQ(a.fields, (std::vector<int64_t>{1100, 100, 2, 7}));
  // and the other way round: theirs is a window behind ours.
  EntrySnapshot c = b;
  EntrySnapshot d = b;
  d.fields = {1000, 100, 9, 0};
  EXPECT_TRUE(merge_snapshot(c, d));
  EXPECT_EQ(c.fields, (std::vector<int64_t>{1100, 100, 2, 9}));
  // fixed window: a later window replaces, the same one takes the larger count.
  EntrySnapshot f;
  f.key = "fw";
  f.kind = Kind::kFixedWindow;
  f.fields = {2000, 4};
  EntrySnapshot g = f;
  g.fields = {2000, 6};
  EXPECT_TRUE(merge_snapshot(f, g));
  EXPECT_EQ(f.fields[1], 6);
  g.fields = {1000, 50};
  EXPECT_FALSE(merge_snapshot(f, g));
}

}  // namespace
}  // namespace fg
