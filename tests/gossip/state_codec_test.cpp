// The state codec: every kind round-trips, and bytes that could not be installed safely
// are refused whole.
#include "state_codec.hpp"

#include <gtest/gtest.h>

#include <random>

#include "shard.hpp"
#include "state.pb.h"

namespace fg {
namespace {

EntrySnapshot snap(std::string key, Kind kind, std::vector<int64_t> fields = {},
                   int64_t expires_ms = 0) {
  EntrySnapshot s;
  s.key = std::move(key);
  s.kind = kind;
  s.fields = std::move(fields);
  s.expires_ms = expires_ms;
  return s;
}

std::vector<EntrySnapshot> sample() {
  std::vector<EntrySnapshot> v;
  v.push_back(snap("tb", Kind::kTokenBucket, {123}));
  v.push_back(snap("gcra", Kind::kGcra, {456}, 1'700'000'000'123));
  v.push_back(snap("fw", Kind::kFixedWindow, {789, 3}));
  v.push_back(snap("sw", Kind::kSlidingWindow, {1, 2, 3, 4}));
  v.push_back(snap("log", Kind::kSlidingLog, {60}));
  v.back().log = {{10, 1}, {10, 2}, {20, 1}};
  v.push_back(snap(std::string("bin\0key", 7), Kind::kConcurrency));
  v.back().leases = {Lease{7, 99, "app-1"}, Lease{8, 98, ""},
                     Lease{9, 97, std::string("\xff\0h", 3)}};
  v.push_back(snap("counter", Kind::kString, {}, 1'700'000'059'000));
  v.back().value = "42";
  v.push_back(snap("text", Kind::kString));
  v.back().value = std::string("\0bytes\xff", 7);
  v.push_back(snap("bucket", Kind::kHash, {}, 1'700'000'060'000));
  v.back().hash = {{"tokens", "7"}, {"ts", "1700000000000"}, {std::string("\0", 1), ""}};
  v.push_back(snap("log:z", Kind::kZSet, {}, 1'700'000'060'000));
  v.back().zset = {{"req:1", -1.5}, {"req:2", 1700000000000.0}, {"", 1e300}};
  v.push_back(snap("queue", Kind::kList));
  v.back().list = {"a", "", std::string("\xff\0", 2)};
  v.push_back(snap("members", Kind::kSet, {}, 1'700'000'060'000));
  v.back().list = {"u1", "", "42", std::string("\xff\0", 2)};
  return v;
}

TEST(StateCodec, EveryKindRoundTrips) {
  std::vector<EntrySnapshot> out;
  ASSERT_TRUE(decode_state(encode_state(sample()), out));
  EXPECT_EQ(out, sample());
  ASSERT_TRUE(decode_state(encode_state({}), out));
  EXPECT_TRUE(out.empty());
}

TEST(StateCodec, UnsafeChunksAreRefusedWhole) {
  auto mutate = [](auto fn) {
    wire::StateChunk c;
    c.ParseFromString(encode_state(sample()));
    fn(c);
    std::string b;
    c.SerializeToString(&b);
    return b;
  };
  const std::string bad[] = {
      mutate([](wire::StateChunk& c) { c.mutable_entries(0)->set_kind(0); }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(0)->set_kind(42); }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(2)->add_fields(5); }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(4)->add_log_cost(1); }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(4)->set_log_cost(0, 0); }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(4)->set_log_at_ns(2, 5); }),
      mutate([](wire::StateChunk& c) {
        c.mutable_entries(0)->add_log_at_ns(1), c.mutable_entries(0)->add_log_cost(1);
      }),
      mutate([](wire::StateChunk& c) { c.mutable_entries(1)->set_key(std::string(5000, 'k')); }),
      mutate([](wire::StateChunk& c) { c.set_version(5000); }),
      std::string("\xff\xff\xff\xff", 4),
  };
  for (const auto& b : bad) {
    std::vector<EntrySnapshot> out = {EntrySnapshot{}};
    EXPECT_FALSE(decode_state(b, out));
    EXPECT_EQ(out.size(), 1u);  // untouched
  }
}

// A limit of each kind that requests on installed state use.
LimitSpec spec_for(Kind k) {
  switch (k) {
    case Kind::kTokenBucket:
      return LimitSpec::token_bucket(10, 1, 1'000'000'000);
    case Kind::kGcra:
      return LimitSpec::gcra(10, 1, 1'000'000'000);
    case Kind::kConcurrency:
      return LimitSpec::concurrency(10, 1'000'000'000);
    default:
      return LimitSpec::window(k, 10, 1'000'000'000);
  }
}

TEST(StateCodec, RandomBytesNeverCrashAndInstallSafely) {
  std::mt19937_64 rng(5);
  const std::string good = encode_state(sample());
  Shard target(1000000, 1);  // (no cap in the way: keys pile up)
  int decoded = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string b = good;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    std::vector<EntrySnapshot> out;
    if (!decode_state(b, out)) {
      ++refused;
      continue;
    }
    ++decoded;
    target.install(out);
    // Whatever was installed answers requests with sane numbers, never corrupt ones.
    const int64_t now = static_cast<int64_t>(rng() % 1'000'000'000'000);
    for (const EntrySnapshot& e : out) {
      if (!is_limiter(e.kind)) continue;  // (data keys: the differential test's)
      ShardOp op;
      op.code = e.kind == Kind::kConcurrency ? OpCode::kAcquire : OpCode::kTake;
      op.key = e.key;
      op.hash = KeyTable::hash(e.key);
      op.spec = spec_for(e.kind);
      op.ttl_ns = op.spec.c;
      target.execute(op, now);
      ASSERT_TRUE(op.status == OpStatus::kOk || op.status == OpStatus::kWrongType) << e.key;
      if (op.status != OpStatus::kOk) continue;
      if (op.code == OpCode::kAcquire) {
        EXPECT_GE(op.acquire.held, 0);
        EXPECT_LE(op.acquire.held, 10 + static_cast<int64_t>(e.leases.size()));
      } else {
        EXPECT_GE(op.decision.remaining, 0) << e.key;
        EXPECT_LE(op.decision.remaining, op.decision.limit) << e.key;
        EXPECT_GE(op.decision.retry_after_ns, -1) << e.key;
        EXPECT_GE(op.decision.reset_after_ns, 0) << e.key;
      }
    }
  }
  // Both paths were taken: mutations that still decode (and were installed and used), and
  // mutations refused whole.
  EXPECT_GT(decoded, 500);
  EXPECT_GT(refused, 1000);
}

TEST(StateCodec, AShardsStateSurvivesTheWire) {
  Shard a(100, 1), b(100, 2);
  a.install(sample());
  std::vector<EntrySnapshot> out;
  ASSERT_TRUE(decode_state(encode_state(a.extract([](uint32_t) { return true; }, 0, true)), out));
  b.install(out);
  EXPECT_EQ(b.key_count(), 12u);
  EXPECT_EQ(a.key_count(), 0u);
}

TEST(StateCodec, SplitByBytesKeepsOrderAndBoundsEachPart) {
  std::vector<EntrySnapshot> many;
  for (int i = 0; i < 1000; ++i) {
    EntrySnapshot e;
    e.key = "key:" + std::to_string(i);
    e.kind = Kind::kGcra;
    e.fields = {i};
    many.push_back(e);
  }
  const auto parts = split_by_bytes(many, 2000);
  EXPECT_GT(parts.size(), 5u);
  std::vector<EntrySnapshot> joined;
  for (const auto& p : parts) {
    EXPECT_LE(p.size(), 2000u / 20 + 2);
    joined.insert(joined.end(), p.begin(), p.end());
  }
  EXPECT_EQ(joined, many);
  EXPECT_EQ(split_by_bytes({}, 2000).size(), 1u);  // one (empty) chunk still says "last"
}

}  // namespace
}  // namespace fg
