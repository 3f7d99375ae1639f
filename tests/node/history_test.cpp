// A node's own history (node/history.hpp): the rings' rates and sizes, the p99 from a
// histogram, the report's encoding between nodes, and the hottest keys' sampling.
#include "history.hpp"

#include <gtest/gtest.h>

#include <random>

#include "services.hpp"

namespace fg {
namespace {

constexpr int64_t kSec = 1'000'000'000;

// One second's counters: `n` seconds in, at 100 decisions (10 denied) a second, half a core.
NodeHistory::Totals second(int64_t n, int64_t start_s = 1'700'000'000) {
  NodeHistory::Totals t;
  t.t_ns = (start_s + n) * kSec;
  t.decisions = 100 * static_cast<uint64_t>(n);
  t.denied = 10 * static_cast<uint64_t>(n);
  t.requests = 150 * static_cast<uint64_t>(n);
  t.cpu_ns = static_cast<uint64_t>(n) * kSec / 2;
  t.latency[2] = 99 * static_cast<uint64_t>(n);  // (100, 250] µs
  t.latency[5] = static_cast<uint64_t>(n);       // (1, 2.5] ms: the slowest 1%
  t.keys = 1000 + static_cast<uint64_t>(n);
  t.lag_ms = n % 10 == 3 ? 7.0f : 1.0f;  // one slow round every ten seconds
  return t;
}

TEST(History, RatesOfTheLastSecondAndTheRingsOfFiveMinutesAndAnHour) {
  Services svc;
  NodeHistory h(svc, nullptr, "n1");
  EXPECT_EQ(h.now().t_s, 0);  // (nothing yet)
  for (int64_t s = 0; s <= 400; ++s) h.add(second(s));
  const HistoryPoint now = h.now();
  EXPECT_EQ(now.t_s, 1'700'000'400);
  EXPECT_FLOAT_EQ(now.decisions, 100);
  EXPECT_FLOAT_EQ(now.denied, 10);
  EXPECT_FLOAT_EQ(now.requests, 150);
  EXPECT_FLOAT_EQ(now.cpu, 0.5f);
  EXPECT_EQ(now.keys, 1400u);
  // 1% of decisions in (1, 2.5] ms: the 99th percentile sits at that bucket's lower edge.
  EXPECT_NEAR(now.p99_ms, 0.25f, 0.01f);
  const auto minutes = h.minutes();
  ASSERT_EQ(minutes.size(), NodeHistory::kMinutePoints);
  EXPECT_EQ(minutes.front().t_s, 1'700'000'101);  // oldest first, one a second
  EXPECT_EQ(minutes.back().t_s, 1'700'000'400);
  const auto hour = h.hour();
  ASSERT_EQ(hour.size(), 40u);  // a point each ten seconds
  for (const HistoryPoint& p : hour) {
    EXPECT_EQ(p.t_s % 10, 0);
    EXPECT_FLOAT_EQ(p.decisions, 100);
    EXPECT_FLOAT_EQ(p.lag_ms, 7.0f);  // the longest round of its ten seconds, not the last
  }
  for (int64_t s = 401; s <= 4000; ++s) h.add(second(s));
  EXPECT_EQ(h.hour().size(), NodeHistory::kHourPoints);  // an hour, no more
  EXPECT_EQ(h.hour().back().t_s, 1'700'004'000);
  EXPECT_EQ(h.minutes().size(), NodeHistory::kMinutePoints);
}

TEST(History, AWallClockSteppedBackIsWaitedOutNotDrawnAsANegativeRate) {
  Services svc;
  NodeHistory h(svc, nullptr, "n1");
  h.add(second(0));
  h.add(second(1));
  NodeHistory::Totals back = second(2);
  back.t_ns = second(0).t_ns;  // the clock stepped back two seconds
  h.add(back);
  EXPECT_EQ(h.minutes().size(), 1u);
  h.add(second(3));
  EXPECT_EQ(h.minutes().size(), 2u);
  EXPECT_FLOAT_EQ(h.now().decisions, 100);
}

TEST(History, P99FromAHistogramAsPrometheusInterpolatesIt) {
  std::array<uint64_t, kLatencyBuckets> h{};
  EXPECT_EQ(histogram_p99_ms(h), 0);
  h[2] = 100;  // all in (100, 250] µs: 99% of the way through the bucket
  EXPECT_NEAR(histogram_p99_ms(h), 0.2485f, 1e-4f);
  h = {};
  h[kLatencyBuckets - 1] = 5;  // past the last bound: the bound itself (1 s)
  EXPECT_NEAR(histogram_p99_ms(h), 1000.0f, 1e-3f);
}

TEST(History, ReportsTravelWholeAndATruncatedOneIsRefused) {
  NodeReport r;
  r.json = "{\"id\":\"n1\"}";
  r.denied = {{std::string("a\tkey\nwith\0bytes", 16), 12}, {"b", 3}};
  r.hot = {{"hot:{x}", 1600}};
  r.shadow = {{"trial", true, 7}, {"old", false, 2}};
  const std::string bytes = r.encode();
  NodeReport back;
  ASSERT_TRUE(NodeReport::decode(bytes, back));
  EXPECT_EQ(back.json, r.json);
  ASSERT_EQ(back.denied.size(), 2u);
  EXPECT_EQ(back.denied[0].key, r.denied[0].key);
  EXPECT_EQ(back.denied[0].denials, 12u);
  ASSERT_EQ(back.hot.size(), 1u);
  EXPECT_EQ(back.hot[0].denials, 1600u);
  ASSERT_EQ(back.shadow.size(), 2u);
  EXPECT_TRUE(back.shadow[0].now);
  EXPECT_FALSE(back.shadow[1].now);
  EXPECT_EQ(back.shadow[1].would_deny, 2u);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    NodeReport part;
    EXPECT_FALSE(NodeReport::decode(std::string_view(bytes).substr(0, cut), part)) << cut;
  }
  NodeReport extra;
  EXPECT_FALSE(NodeReport::decode(bytes + "x", extra));
  EXPECT_EQ(ReportAsk::decode("kh").encode(), "kh");
  EXPECT_FALSE(ReportAsk::decode("").keys);
}

TEST(History, TheHottestKeysAreSampledOneDecisionInSixteen) {
  RequestMetrics m;
  const int64_t now_s = 1'700'000'000;
  std::mt19937 random(7);  // (keys at random: a pattern could alias with the sampling)
  uint64_t cold = 0;
  for (int i = 0; i < 16 * 1000; ++i) {
    const bool is_cold = random() % 4 == 0;
    cold += is_cold;
    if (RequestMetrics::sample_hot()) m.hot(is_cold ? "cold" : "hot", now_s);
  }
  const auto top = m.top_hot(10, now_s);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].key, "hot");
  // about 12,000 decisions on "hot", 4,000 on "cold": each estimated within 10%
  EXPECT_NEAR(static_cast<double>(top[0].denials), static_cast<double>(16000 - cold), 1200);
  EXPECT_NEAR(static_cast<double>(top[1].denials), static_cast<double>(cold), 400);
  EXPECT_TRUE(m.top_hot(10, now_s + 180).empty());  // (two minutes on: forgotten)
}

}  // namespace
}  // namespace fg
