// The hand-written wire codec against the generated one: whatever one writes the other
// reads the same, unknown fields are skipped, malformed bytes are refused.
#include "native_wire.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "native.pb.h"

namespace fg::wire {
namespace {

namespace pb = floodgate::native;

TEST(NativeWire, ReadsWhatTheGeneratedCodeWrites) {
  pb::Request r;
  r.set_op(pb::RESERVE);
  r.set_key(std::string("user:\0:42", 9));
  r.set_policy("free");
  r.mutable_limit()->set_kind(pb::GCRA);
  r.mutable_limit()->set_a(-5);  // negative values travel as 10-byte varints
  r.mutable_limit()->set_b(100);
  r.mutable_limit()->set_period_ms(60000);
  r.set_cost(0);
  r.set_ttl_ms(1500);
  r.set_lease(0xfedcba9876543210ULL);
  r.set_holder("app-1");
  r.set_bound(true);
  std::string bytes = r.SerializeAsString();
  bytes += std::string("\xa0\x06\x07", 3);  // field 100, varint 7: from a newer client
  RequestView v;
  ASSERT_TRUE(decode_request(bytes, v));
  EXPECT_EQ(v.op, pb::RESERVE);
  EXPECT_EQ(v.key, std::string_view("user:\0:42", 9));
  EXPECT_EQ(v.policy, "free");
  EXPECT_TRUE(v.has_limit);
  EXPECT_EQ(v.kind, pb::GCRA);
  EXPECT_EQ(v.a, -5);
  EXPECT_EQ(v.b, 100);
  EXPECT_EQ(v.period_ms, 60000);
  EXPECT_TRUE(v.has_cost);  // an explicit 0 is not "absent"
  EXPECT_EQ(v.cost, 0);
  EXPECT_EQ(v.ttl_ms, 1500);
  EXPECT_EQ(v.lease, 0xfedcba9876543210ULL);
  EXPECT_EQ(v.holder, "app-1");
  EXPECT_TRUE(v.bound);

  pb::Request bare;
  bare.set_op(pb::TAKE);
  ASSERT_TRUE(decode_request(bare.SerializeAsString(), v));
  EXPECT_FALSE(v.has_cost);

  pb::ClientFrame f;
  f.set_version(1);
  f.mutable_hello()->set_client_name("x");
  *f.add_requests() = r;
  *f.add_requests() = bare;
  ClientFrameView fv;
  const std::string frame = f.SerializeAsString();  // the views point into it
  ASSERT_TRUE(decode_client_frame(frame, fv));
  EXPECT_EQ(fv.version, 1u);
  EXPECT_TRUE(fv.has_hello);
  ASSERT_EQ(fv.requests.size(), 2u);
  pb::Request back;
  ASSERT_TRUE(back.ParseFromArray(fv.requests[0].data(), static_cast<int>(fv.requests[0].size())));
  EXPECT_EQ(back.holder(), "app-1");
}

TEST(NativeWire, TheRequestWriterAgreesWithTheGeneratedCode) {
  RequestView v;
  v.op = pb::ACQUIRE;
  v.key = "conn:user:42";
  v.has_limit = true;
  v.kind = pb::CONCURRENCY;
  v.a = 5;
  v.period_ms = 60000;
  v.has_cost = true;
  v.cost = 0;
  v.ttl_ms = -1;
  v.lease = 0xffffffffffffffffULL;
  v.holder = "app-1";
  v.bound = true;
  pb::Request r;
  const std::string bytes = encode_request(v);
  ASSERT_TRUE(r.ParseFromString(bytes));
  EXPECT_EQ(r.op(), pb::ACQUIRE);
  EXPECT_EQ(r.key(), "conn:user:42");
  EXPECT_EQ(r.limit().kind(), pb::CONCURRENCY);
  EXPECT_EQ(r.limit().a(), 5);
  EXPECT_EQ(r.limit().period_ms(), 60000);
  EXPECT_TRUE(r.has_cost());
  EXPECT_EQ(r.cost(), 0);
  EXPECT_EQ(r.ttl_ms(), -1);
  EXPECT_EQ(r.lease(), 0xffffffffffffffffULL);
  EXPECT_EQ(r.holder(), "app-1");
  EXPECT_TRUE(r.bound());
  EXPECT_EQ(bytes, r.SerializeAsString());  // byte for byte what the generated code writes
  RequestView back;
  ASSERT_TRUE(decode_request(bytes, back));
  EXPECT_EQ(back.holder, "app-1");
  EXPECT_EQ(back.lease, v.lease);
}

TEST(NativeWire, ACalendarWindowsZoneTravelsInTheLimit) {
  RequestView v;
  v.op = pb::TAKE;
  v.key = "k";
  v.has_limit = true;
  v.kind = pb::CALENDAR_WINDOW;
  v.a = 1000;
  v.b = 3;
  v.time_zone = "Europe/Berlin";
  const std::string bytes = encode_request(v);
  pb::Request r;
  ASSERT_TRUE(r.ParseFromString(bytes));
  EXPECT_EQ(r.limit().kind(), pb::CALENDAR_WINDOW);
  EXPECT_EQ(r.limit().time_zone(), "Europe/Berlin");
  EXPECT_EQ(bytes, r.SerializeAsString());
  RequestView back;
  ASSERT_TRUE(decode_request(bytes, back));
  EXPECT_EQ(back.time_zone, "Europe/Berlin");
  EXPECT_EQ(back.b, 3);
}

// Every number negative is every number ten bytes long: the request's largest form, written
// fresh and into a string that already held a longer request.
TEST(NativeWire, TheLargestRequestIsWrittenWholeIntoAReusedString) {
  for (const size_t key_len : {size_t{1}, size_t{300}, size_t{5000}}) {
    RequestView v;
    v.op = -1;
    const std::string key(key_len, 'k');
    v.key = key;
    v.policy = "p";
    v.has_limit = true;
    v.kind = -1;
    v.a = v.b = v.period_ms = INT64_MIN;
    const std::string zone(300, 'z');  // (no zone is that long: written cut short)
    v.time_zone = zone;
    v.has_cost = true;
    v.cost = -1;
    v.ttl_ms = -1;
    v.lease = 1;
    v.holder = "h";
    v.bound = v.forward = v.cluster_wide = true;
    pb::Request r;
    std::string out(9000, 'x');
    encode_request(v, out);
    ASSERT_TRUE(r.ParseFromString(out)) << key_len;
    EXPECT_EQ(r.key(), key);
    EXPECT_EQ(r.limit().period_ms(), INT64_MIN);
    EXPECT_EQ(r.limit().time_zone(), zone.substr(0, 80));
    EXPECT_EQ(r.cost(), -1);
    EXPECT_TRUE(r.cluster_wide());
    EXPECT_EQ(out, r.SerializeAsString());
    EXPECT_EQ(out, encode_request(v));
  }
}

TEST(NativeWire, WritesWhatTheGeneratedCodeReads) {
  std::string out = "prefix";
  ServerFrameWriter w(out, 1);
  ResultView a;
  a.allowed = true;
  a.limit = 100;
  a.remaining = 99;
  a.retry_after_ms = -1;
  a.reset_after_ms = 600;
  a.lease = 0x8000000000000001ULL;
  a.value = 3;
  ResultView b;
  b.code = pb::MOVED;
  b.error = "MOVED 15495 127.0.0.1:7381";
  b.slot = 15495;
  b.node = "node-2";
  b.unavailable = "fail_open";
  std::string big(5000, 'e');
  ResultView c;
  c.code = pb::ERR;
  c.error = big;
  w.add(a);
  w.add(b);
  w.add(c);
  w.finish();
  ASSERT_EQ(out.substr(0, 6), "prefix");
  const auto* p = reinterpret_cast<const unsigned char*>(out.data() + 6);
  const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
  ASSERT_EQ(n, out.size() - 10);
  pb::ServerFrame f;
  ASSERT_TRUE(f.ParseFromArray(out.data() + 10, static_cast<int>(n)));
  EXPECT_EQ(f.version(), 1u);
  ASSERT_EQ(f.results_size(), 3);
  EXPECT_TRUE(f.results(0).allowed());
  EXPECT_EQ(f.results(0).remaining(), 99);
  EXPECT_EQ(f.results(0).retry_after_ms(), -1);
  EXPECT_EQ(f.results(0).lease(), 0x8000000000000001ULL);
  EXPECT_EQ(f.results(1).code(), pb::MOVED);
  EXPECT_EQ(f.results(1).node(), "node-2");
  EXPECT_EQ(f.results(1).slot(), 15495u);
  EXPECT_EQ(f.results(1).unavailable(), "fail_open");
  EXPECT_EQ(f.results(2).error(), big);

  // And the client's reader agrees with the generated writer.
  ServerFrameView sv;
  const std::string again = f.SerializeAsString();
  ASSERT_TRUE(decode_server_frame(again, sv));
  ASSERT_EQ(sv.results.size(), 3u);
  ResultView r;
  ASSERT_TRUE(decode_result(sv.results[1], r));
  EXPECT_EQ(r.code, pb::MOVED);
  EXPECT_EQ(r.error, "MOVED 15495 127.0.0.1:7381");
  ASSERT_TRUE(decode_result(sv.results[0], r));
  EXPECT_EQ(r.retry_after_ms, -1);
  EXPECT_EQ(r.value, 3);
}

TEST(NativeWire, RefusesMalformedBytes) {
  RequestView v;
  EXPECT_FALSE(decode_request(std::string("\x12\x05"
                                          "ab",
                                          4),
                              v));                                  // length past the end
  EXPECT_FALSE(decode_request(std::string("\x08", 1), v));          // varint cut short
  EXPECT_FALSE(decode_request(std::string("\x0b", 1), v));          // a group
  EXPECT_FALSE(decode_request(std::string("\x22\x02\x08", 3), v));  // limit cut short
  ClientFrameView f;
  EXPECT_FALSE(decode_client_frame(std::string(10, '\xff'), f));
  EXPECT_TRUE(decode_client_frame("", f));  // an empty frame is a frame with no requests
}

}  // namespace
}  // namespace fg::wire
