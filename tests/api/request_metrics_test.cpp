// The most-denied keys (RequestMetrics::denied / top_denied): exact while few keys are
// denied, and Space-Saving's bounds under a flood of distinct keys. Each test records from
// a thread of its own (the counts are per thread) and with keys of its own prefix (the
// metrics are process-wide).
#include "request_metrics.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <thread>

namespace fg {
namespace {

constexpr int64_t kMinute = 29'000'000;  // minutes since the epoch, any one will do

std::map<std::string, uint64_t> reported(const std::string& prefix, int64_t minute) {
  std::map<std::string, uint64_t> out;
  for (const auto& d : RequestMetrics::get().top_denied(100000, minute * 60 + 30))
    if (d.key.rfind(prefix, 0) == 0) out[d.key] = d.denials;
  return out;
}

template <class F>
void on_a_thread(F f) {
  std::thread t(f);
  t.join();
}

TEST(DeniedKeys, ExactWhileFewKeysAreDenied) {
  on_a_thread([] {
    for (int i = 0; i < 100; ++i)
      for (int j = 0; j <= i; ++j)
        RequestMetrics::get().denied("few:" + std::to_string(i), kMinute * 60 + 1);
  });
  const auto r = reported("few:", kMinute);
  ASSERT_EQ(r.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r.at("few:" + std::to_string(i)), uint64_t(i + 1)) << i;
  const auto top = RequestMetrics::get().top_denied(1, kMinute * 60 + 30);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].key, "few:99");
}

// A skewed stream over many more keys than there are slots: every key reported is counted
// at least as often as it was denied and at most N/slots more, and every key denied more
// than N/slots times is reported (Space-Saving's guarantees, which a broken heap or probe
// table breaks).
TEST(DeniedKeys, AFloodOfDistinctKeysKeepsSpaceSavingsBounds) {
  constexpr int kDenials = 200000;
  constexpr uint64_t kSlots = 128;
  std::map<std::string, uint64_t> truth;
  on_a_thread([&truth] {
    std::mt19937_64 rng(7);
    for (int i = 0; i < kDenials; ++i) {
      // Half the denials on 20 hot keys, the rest spread over 50000.
      const uint64_t x = rng();
      const std::string key = (x & 1) ? "flood:hot:" + std::to_string((x >> 1) % 20)
                                      : "flood:" + std::to_string((x >> 1) % 50000);
      ++truth[key];
      RequestMetrics::get().denied(key, (kMinute + 1) * 60 + 1);
    }
  });
  const auto r = reported("flood:", kMinute + 1);
  EXPECT_LE(r.size(), kSlots);
  const uint64_t slack = kDenials / kSlots;
  for (const auto& [key, count] : r) {
    ASSERT_TRUE(truth.count(key)) << key;
    EXPECT_GE(count, truth[key]) << key;
    EXPECT_LE(count, truth[key] + slack) << key;
  }
  for (const auto& [key, count] : truth) {
    if (count > slack) {
      EXPECT_TRUE(r.count(key)) << key << " denied " << count << " times";
    }
  }
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(r.count("flood:hot:" + std::to_string(i)));
}

// This minute's and the last one's denials are reported; older ones are not.
TEST(DeniedKeys, TheLastTwoMinutesCount) {
  const int64_t m = kMinute + 10;
  on_a_thread([m] {
    auto& metrics = RequestMetrics::get();
    metrics.denied("roll:a", m * 60);
    metrics.denied("roll:a", (m + 1) * 60);
    metrics.denied("roll:b", (m + 1) * 60 + 59);
  });
  auto r = reported("roll:", m + 1);
  EXPECT_EQ(r["roll:a"], 2u);
  EXPECT_EQ(r["roll:b"], 1u);
  r = reported("roll:", m + 2);  // only minute m + 1's
  EXPECT_EQ(r["roll:a"], 1u);
  EXPECT_EQ(r["roll:b"], 1u);
  EXPECT_TRUE(reported("roll:", m + 3).empty());
}

}  // namespace
}  // namespace fg
