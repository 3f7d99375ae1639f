// RESP2/RESP3 encoding of every reply type.
#include "resp_writer.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fg
