// The kinds table: a row per kind, at its kind's place, limiters alone taking; every kind's
// state copied out (a snapshot) and into another shard comes back the same, weighs and
// names its encoding as its row says.
#include "value_kinds.hpp"

#include <gtest/gtest.h>

#include <map>

#include "data_op.hpp"
#include "entry_snapshot.hpp"
#include "shard.hpp"

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kS;

TEST(ValueKinds, EachRowSitsAtItsKindAndOnlyRateLimitersTake) {
  ASSERT_TRUE(kind_rows_in_order());
  for (int i = 0; i <= static_cast<int>(kLastKind); ++i) {
    const Kind k = static_cast<Kind>(i);
    SCOPED_TRACE(std::string(kind_name(k)));
    const KindRow& row = kind_row(k);
    EXPECT_EQ(row.kind, k);
    // (a concurrency limit acquires and releases leases: its own ops, not a take)
    EXPECT_EQ(row.take != nullptr, is_limiter(k) && k != Kind::kConcurrency);
    EXPECT_EQ(Entry::state_size(k), row.state_size);
    EXPECT_EQ(snapshot_field_count(k), static_cast<size_t>(row.fields));
  }
  // A number past the last kind is no kind (never indexes past the table).
  EXPECT_EQ(kind_row(static_cast<Kind>(200)).kind, Kind::kNone);
}

// One key of every kind, with state in it.
void fill(Shard& s) {
  auto take = [&](const std::string& key, LimitSpec spec) {
    ShardOp o;
    o.code = spec.kind == Kind::kConcurrency ? OpCode::kAcquire : OpCode::kTake;
    o.key = key;
    o.hash = KeyTable::hash(key);
    o.spec = spec;
    o.ttl_ns = spec.kind == Kind::kConcurrency ? spec.c : 0;
    o.holder = "app";
    s.execute(o, kT0);
  };
  take("tb", LimitSpec::token_bucket(5, 1, kS));
  take("gcra", LimitSpec::gcra(4, 1, kS));
  take("fw", LimitSpec::window(Kind::kFixedWindow, 5, 10 * kS));
  take("sw", LimitSpec::window(Kind::kSlidingWindow, 5, 10 * kS));
  take("log", LimitSpec::window(Kind::kSlidingLog, 5, 10 * kS));
  take("conn", LimitSpec::concurrency(5, 30 * kS));
  auto cal = make_calendar(5, "day", "Europe/Berlin");
  ASSERT_TRUE(cal.ok()) << cal.error();
  take("cal", cal.value());
  DataReply r;
  data(s, DataCmd::kSet, {"set", "str", "hello"}, r, nullptr, kT0);
  data(s, DataCmd::kSet, {"set", "int", "42"}, r, nullptr, kT0);
  data(s, DataCmd::kHSet, {"hset", "hash", "f", "1", "g", "two"}, r, nullptr, kT0);
  data(s, DataCmd::kZAdd, {"zadd", "zset", "1.5", "a", "2", "b"}, r, nullptr, kT0);
  data(s, DataCmd::kRPush, {"rpush", "list", "x", "y", "z"}, r, nullptr, kT0);
  data(s, DataCmd::kSAdd, {"sadd", "set", "1", "2", "three"}, r, nullptr, kT0);
  data(s, DataCmd::kXAdd, {"xadd", "stream", "5-1", "f", "1", "", "two"}, r, nullptr, kT0);
  data(s, DataCmd::kXAdd, {"xadd", "stream", "7-*", "g", std::string(300, 'v')}, r, nullptr, kT0);
  data(s, DataCmd::kXDel, {"xdel", "stream", "5-1"}, r, nullptr, kT0);
  data(s, DataCmd::kXSetId, {"xsetid", "stream", "9-9", "entriesadded", "40"}, r, nullptr, kT0);
  // (its consumer groups: a pending entry, a consumer without any, one group untouched)
  data(s, DataCmd::kXGroup, {"xgroup", "create", "stream", "workers", "0"}, r, nullptr, kT0);
  data(s, DataCmd::kXGroup, {"xgroup", "create", "stream", "idle", "$", "entriesread", "40"}, r,
       nullptr, kT0);
  data(s, DataCmd::kXReadGroup, {"xreadgroup", "group", "workers", "w1", "streams", "stream", ">"},
       r, nullptr, kT0);
  data(s, DataCmd::kXGroup, {"xgroup", "createconsumer", "stream", "workers", "w2"}, r, nullptr,
       kT0);
}

std::map<std::string, EntrySnapshot> by_key(std::vector<EntrySnapshot> v) {
  std::map<std::string, EntrySnapshot> out;
  for (EntrySnapshot& s : v) {
    s.account = 0;
    out[s.key] = std::move(s);
  }
  return out;
}

TEST(ValueKinds, EveryKindCopiedOutAndInComesBackTheSame) {
  Shard source(100, 1), target(100, 2);
  fill(source);
  const auto out = source.extract([](uint32_t) { return true; }, kT0, false);
  ASSERT_EQ(out.size(), 14u);  // (every kind but none, the string twice)
  target.install(out);
  const auto again = target.extract([](uint32_t) { return true; }, kT0, false);
  const auto a = by_key(out), b = by_key(again);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.at("stream").hash.size(), 2u);  // (its two consumer groups travel with it)
  EXPECT_GT(a.at("stream").hash[1].second.size(), b.at("stream").hash[0].second.size());
  for (const auto& [key, snap] : a) {
    SCOPED_TRACE(key);
    ASSERT_EQ(b.count(key), 1u);
    EXPECT_TRUE(snap == b.at(key));
  }
  // Each kind's encoding as OBJECT ENCODING answers it (Redis 7.0's for the data types).
  const std::map<std::string, std::string> encodings = {
      {"str", "embstr"},      {"int", "int"},         {"hash", "listpack"},
      {"zset", "listpack"},   {"list", "quicklist"},  {"set", "hashtable"},
      {"tb", "token_bucket"}, {"log", "sliding_log"}, {"stream", "stream"}};
  for (const auto& [key, want] : encodings) {
    std::vector<std::string_view> words = {"object", "encoding", key};
    DataReply r;
    ShardOp o;
    o.code = OpCode::kData;
    o.data = DataCmd::kObject;
    o.key = key;  // (OBJECT's key is its third word)
    o.hash = KeyTable::hash(key);
    o.args = &words;
    o.reply = &r;
    target.execute(o, kT0);
    ASSERT_FALSE(r.items.empty()) << key;
    EXPECT_EQ(r.items[0].s, want) << key;
  }
}

}  // namespace
}  // namespace fg
