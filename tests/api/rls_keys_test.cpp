// The gateway door's counters per domain: bounded per call and per domain, given back as
// their windows end, and a full domain made room in by forgetting the heaviest caller's
// least recently used counters — never by refusing a new client.
#include "rls_keys.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;

struct Calls {
  RlsKeys keys;
  std::string why;
  std::vector<std::string> evicted;
  std::deque<std::string> keep;
  explicit Calls(size_t max) : keys(max) {}
  bool call(std::string_view domain, std::string_view caller, std::vector<std::string> ks,
            int64_t now, int64_t life = 60 * kS) {
    std::vector<RlsKeys::Key> v;
    for (auto& k : ks) v.push_back({keep.emplace_back(k), life});
    evicted.clear();
    return keys.note(domain, caller, v, now, evicted, why);
  }
};

TEST(RlsKeys, EachDomainHoldsItsOwnBoundAndWindowsGiveCountersBack) {
  Calls c(3);
  EXPECT_TRUE(c.call("d1", "gw", {"a", "b"}, 0));
  EXPECT_TRUE(c.call("d1", "gw", {"a", "b", "c"}, kS));  // (known ones cost nothing)
  EXPECT_TRUE(c.evicted.empty());
  EXPECT_TRUE(c.call("d2", "gw", {"a", "b", "c"}, 2 * kS));  // (another domain: its own)
  EXPECT_TRUE(c.evicted.empty());
  EXPECT_TRUE(c.call("d1", "gw", {"d"}, 62 * kS));  // (the first ones' windows ended)
  EXPECT_TRUE(c.evicted.empty());
  EXPECT_EQ(c.keys.held("d1"), 1u);
  Calls big(1000);
  std::vector<std::string> many;
  for (size_t i = 0; i <= RlsKeys::kMaxNewPerCall; ++i) many.push_back("k" + std::to_string(i));
  EXPECT_FALSE(big.call("x", "gw", many, 0));
  EXPECT_NE(big.why.find("at most 64 new counters"), std::string::npos) << big.why;
  many.pop_back();
  EXPECT_TRUE(big.call("x", "gw", many, 0));
}

// The attack: one caller making counters with a year's window as fast as it can. It fills
// the domain, then churns its own oldest; a new client's counters are made, and what they
// push out is the attacker's, never another client's.
TEST(RlsKeys, AFullDomainForgetsTheHeaviestCallersOldestNotANewClient) {
  Calls c(100);
  const int64_t year = 366 * 86400 * kS;
  EXPECT_TRUE(c.call("d", "good", {"g1", "g2"}, 0, year));
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(c.call("d", "attacker", {"x" + std::to_string(i)}, kS + i, year));
  }
  EXPECT_EQ(c.keys.held("d"), 100u);
  EXPECT_EQ(c.keys.held("d", "good"), 2u);  // (untouched by the attacker's churn)
  // A new client: served, and its counters push out the attacker's oldest.
  EXPECT_TRUE(c.call("d", "newcomer", {"n1", "n2", "n3"}, 2 * kS, year));
  EXPECT_EQ(c.evicted.size(), 3u);
  for (const auto& e : c.evicted) EXPECT_EQ(e[0], 'x') << e;
  EXPECT_EQ(c.keys.held("d", "newcomer"), 3u);
  EXPECT_EQ(c.keys.held("d", "good"), 2u);
  // Using a counter keeps it: the good client's, used now, outlive the attacker's.
  EXPECT_TRUE(c.call("d", "good", {"g1"}, 3 * kS, year));
  EXPECT_TRUE(c.evicted.empty());
  EXPECT_EQ(c.keys.evictions(), 402u + 3u);  // (500 - 98 of its own, then 3)
}

// Callers sharing a full domain evenly: one over its even share gives up its own oldest.
TEST(RlsKeys, ACallerOverItsEvenShareGivesUpItsOwn) {
  Calls c(10);
  EXPECT_TRUE(c.call("d", "a", {"a1", "a2", "a3", "a4", "a5", "a6"}, 0));
  EXPECT_TRUE(c.call("d", "b", {"b1", "b2", "b3", "b4"}, 1));
  EXPECT_TRUE(c.call("d", "a", {"a7"}, 2));  // (a holds 6 of 10, more than its 5)
  ASSERT_EQ(c.evicted.size(), 1u);
  EXPECT_EQ(c.evicted[0], "a1");
  EXPECT_TRUE(c.call("d", "b", {"b5"}, 3));  // (b holds 4: the heaviest, a, gives up)
  ASSERT_EQ(c.evicted.size(), 1u);
  EXPECT_EQ(c.evicted[0], "a2");
}

}  // namespace
}  // namespace fg
