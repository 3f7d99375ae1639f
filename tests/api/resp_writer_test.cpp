// RESP2/RESP3 encoding of every reply type, and splitting a stream of replies.
#include "resp_writer.hpp"

#include <gtest/gtest.h>

#include "resp_reply.hpp"

namespace fg {
namespace {

TEST(RespWriter, Resp2) {
  std::string out;
  RespWriter w(out, 2);
  w.simple("OK");
  w.error("ERR bad\r\nthing");
  w.integer(-42);
  w.bulk("hi");
  w.null();
  w.map(1);
  w.bulk("k");
  w.boolean(true);
  EXPECT_EQ(out, "+OK\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$-1\r\n*2\r\n$1\r\nk\r\n:1\r\n");
}

TEST(RespWriter, Resp3) {
  std::string out;
  RespWriter w(out, 3);
  w.null();
  w.map(1);
  w.set(2);
  w.boolean(false);
  EXPECT_EQ(out, "_\r\n%1\r\n~2\r\n#f\r\n");
}

TEST(RespValueLength, FindsWholeRepliesAndOnlyWholeOnes) {
  auto len = [](const std::string& s) { return resp_value_length(s.data(), s.size()); };
  EXPECT_EQ(len(":12\r\n:3\r\n"), 5u);
  EXPECT_EQ(len("+OK\r\n"), 5u);
  EXPECT_EQ(len("-ERR x y\r\n"), 10u);
  EXPECT_EQ(len("$3\r\nabc\r\n"), 9u);
  EXPECT_EQ(len("$-1\r\n"), 5u);
  EXPECT_EQ(len("_\r\n"), 3u);
  EXPECT_EQ(len("*2\r\n:1\r\n$1\r\nx\r\n"), 15u);
  EXPECT_EQ(len("%1\r\n+a\r\n:1\r\n"), 12u);
  EXPECT_EQ(len("*-1\r\n"), 5u);
  EXPECT_EQ(len("$3\r\nab"), 0u);      // cut short
  EXPECT_EQ(len("*2\r\n:1\r\n"), 0u);  // missing element
  EXPECT_EQ(len("?what\r\n"), 0u);     // not RESP
  EXPECT_EQ(len("$99999999999999999999\r\n"), 0u);
}

}  // namespace
}  // namespace fg
