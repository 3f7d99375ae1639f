// Who holds what: a key's charge in 20 bits, the keyspace's tallies as keys come, grow and
// go (back to nothing when they are gone), and the caps held against them.
#include "accounts.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "shard.hpp"

namespace fg {
namespace {

TEST(Accounts, AChargeFitsAnySizeRoundedDownByLessThanOnePart) {
  for (uint64_t n : {0ull, 1ull, 32767ull, 32768ull, 65535ull, 1ull << 20, (1ull << 20) + 12345,
                     123456789ull, 1ull << 40, (1ull << 45) + 7}) {
    const uint64_t back = decode_charge(encode_charge(n));
    EXPECT_LE(back, n);
    EXPECT_GE(static_cast<double>(back), static_cast<double>(n) * (1 - 1.0 / 16384)) << n;
    EXPECT_LT(encode_charge(n), 1u << 20);
  }
}

TEST(Accounts, CapsAndRoom) {
  Accounts a;
  EXPECT_EQ(a.new_key(7), Accounts::Room::kOk);
  a.set_cap(7, Accounts::kKeys, 2);
  a.charge_key(7, 1, 100);
  EXPECT_EQ(a.new_key(7), Accounts::Room::kOk);
  a.charge_key(7, 1, 100);
  EXPECT_EQ(a.new_key(7), Accounts::Room::kUserKeys);
  EXPECT_EQ(a.new_key(8), Accounts::Room::kOk);  // (another user: untouched)
  a.set_cap(8, Accounts::kBytes, 50);
  a.charge_key(8, 1, 60);
  EXPECT_EQ(a.grow(8), Accounts::Room::kUserMemory);
  a.set_maxmemory(200);
  EXPECT_EQ(a.total_bytes(), 260);
  EXPECT_EQ(a.grow(9), Accounts::Room::kNodeMemory);
  a.set_cap(Accounts::kNone, Accounts::kKeys, 0);  // (no one's is never capped)
  EXPECT_TRUE(a.room(Accounts::kNone, Accounts::kKeys));
}

// Every key a shard makes is charged to the account of the op that made it, what it holds
// follows it as it grows and shrinks, and when every key is gone nothing is charged.
TEST(Accounts, AShardsKeysAreChargedAsTheyGrowAndGiveItAllBackWhenGone) {
  auto owner = std::make_shared<Accounts>();
  Accounts& acc = *owner;
  Shard s(1'000'000, 1);
  s.set_accounts(owner);
  std::mt19937_64 rng(5);
  std::vector<std::string> words;
  std::deque<std::vector<std::string_view>> argvs;
  auto run = [&](uint16_t account, std::vector<std::string> w) {
    static std::deque<std::vector<std::string>> keep;
    keep.push_back(std::move(w));
    std::vector<std::string_view>& a = argvs.emplace_back(keep.back().begin(), keep.back().end());
    DataReply reply;
    ShardOp op;
    op.code = OpCode::kData;
    op.data = a[0] == "SET"      ? DataCmd::kSet
              : a[0] == "APPEND" ? DataCmd::kAppend
              : a[0] == "RPUSH"  ? DataCmd::kRPush
              : a[0] == "LPOP"   ? DataCmd::kLPop
              : a[0] == "HSET"   ? DataCmd::kHSet
              : a[0] == "SADD"   ? DataCmd::kSAdd
              : a[0] == "ZADD"   ? DataCmd::kZAdd
                                 : DataCmd::kDel;
    op.key = a[1];
    op.hash = KeyTable::hash(op.key);
    op.args = &a;
    op.reply = &reply;
    op.account = account;
    s.execute(op, 1'000'000'000);
    return reply;
  };
  run(3, {"SET", "a", std::string(1000, 'x')});
  const int64_t one = acc.used(3, Accounts::kBytes);
  EXPECT_GT(one, 1000);
  EXPECT_EQ(acc.used(3, Accounts::kKeys), 1);
  run(3, {"APPEND", "a", std::string(5000, 'y')});
  EXPECT_GE(acc.used(3, Accounts::kBytes), one + 5000);
  run(4, {"RPUSH", "l", std::string(3000, 'a'), std::string(3000, 'b')});
  run(4, {"HSET", "h", "f", std::string(2000, 'v')});
  run(4, {"SADD", "s", std::string(2000, 'm')});
  run(4, {"ZADD", "z", "1", std::string(2000, 'm')});
  EXPECT_GT(acc.used(4, Accounts::kBytes), 12000);
  EXPECT_EQ(acc.used(4, Accounts::kKeys), 4);
  const int64_t with_two = acc.used(4, Accounts::kBytes);
  run(4, {"LPOP", "l"});
  EXPECT_LT(acc.used(4, Accounts::kBytes), with_two - 2900);
  for (const char* k : {"a", "l", "h", "s", "z"}) run(0, {"DEL", k});
  EXPECT_EQ(acc.used(3, Accounts::kKeys), 0);
  EXPECT_EQ(acc.used(3, Accounts::kBytes), 0);
  EXPECT_EQ(acc.used(4, Accounts::kKeys), 0);
  EXPECT_EQ(acc.used(4, Accounts::kBytes), 0);
  EXPECT_EQ(acc.total_bytes(), 0);
}

// A batch's charges reach Accounts once, when the batch ends (the tallies are shared by every
// thread): within the batch, a share is still checked against what the batch itself made.
TEST(Accounts, ABatchsChargesLandAtItsEndAndItsOwnKeysCountAgainstTheShare) {
  auto owner = std::make_shared<Accounts>();
  Accounts& acc = *owner;
  acc.set_cap(5, Accounts::kKeys, 10);
  Shard s(1'000'000, 1);
  s.set_accounts(owner);
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<ShardOp> ops(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ops[i].code = OpCode::kTake;
    ops[i].key = keys[i];
    ops[i].spec = LimitSpec::token_bucket(10, 1, 1'000'000'000);
    ops[i].account = 5;
    ops[i].shard = 0;
  }
  s.execute_batch(ops, 0, 1'000'000'000);
  int made = 0;
  for (const ShardOp& op : ops) made += op.status == OpStatus::kOk;
  EXPECT_EQ(made, 10);
  EXPECT_EQ(acc.used(5, Accounts::kKeys), 10);
  EXPECT_GT(acc.used(5, Accounts::kBytes), 0);
  EXPECT_EQ(acc.total_bytes(), acc.used(5, Accounts::kBytes));
}

}  // namespace
}  // namespace fg
