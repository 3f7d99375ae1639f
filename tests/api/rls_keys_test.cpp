// The gateway door's counters per domain: bounded, per call and per domain, and given back
// as their windows end.
#include "rls_keys.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace fg {
namespace {

constexpr int64_t kS = 1'000'000'000;

TEST(RlsKeys, EachDomainHoldsItsOwnBoundAndWindowsGiveCountersBack) {
  RlsKeys keys(3);
  std::string why;
  std::vector<std::string> names = {"a", "b", "c", "d"};
  auto call = [&](std::string_view domain, std::vector<std::string> ks, int64_t now) {
    static std::deque<std::string> keep;
    std::vector<RlsKeys::Key> v;
    for (auto& k : ks) v.push_back({keep.emplace_back(k), 60 * kS});
    return keys.note(domain, v, now, why);
  };
  EXPECT_TRUE(call("d1", {"a", "b"}, 0));
  EXPECT_TRUE(call("d1", {"a", "b", "c"}, kS));  // (known ones cost nothing)
  EXPECT_FALSE(call("d1", {"d"}, 2 * kS));
  EXPECT_NE(why.find("rls-max-keys-per-domain"), std::string::npos) << why;
  EXPECT_TRUE(call("d2", {"a", "b", "c"}, 2 * kS));  // (another domain: its own)
  EXPECT_TRUE(call("d1", {"d"}, 62 * kS));           // (the first ones' windows ended)
  EXPECT_EQ(keys.held("d1"), 1u);
  std::vector<std::string> many;
  for (size_t i = 0; i <= RlsKeys::kMaxNewPerCall; ++i) many.push_back("k" + std::to_string(i));
  RlsKeys big(1000);
  std::vector<RlsKeys::Key> v;
  for (auto& k : many) v.push_back({k, kS});
  EXPECT_FALSE(big.note("x", v, 0, why));
  EXPECT_NE(why.find("at most 64 new counters"), std::string::npos) << why;
  v.pop_back();
  EXPECT_TRUE(big.note("x", v, 0, why));
}

}  // namespace
}  // namespace fg
