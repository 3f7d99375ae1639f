// Bits and LCS against the real thing: seeded command sequences (SETBIT, GETBIT, BITCOUNT and
// BITPOS over byte and bit ranges, BITFIELD with every type, overflow and offset form,
// BITFIELD_RO, BITOP, LCS with every option, keys holding integers, text and other types,
// transactions) to redis-server (Debian's) and to a Floodgate node of several shards,
// every reply compared byte for byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "node_process.hpp"
#include "redis_server.hpp"

namespace fg::testing {
namespace {

class BitsGenerator {
 public:
  explicit BitsGenerator(uint64_t seed) : rng_(seed) {}

  std::vector<std::string> next() {
    if (in_multi_ < 0 && pick(30) == 0) {
      in_multi_ = 1 + pick(4);
      return {"MULTI"};
    }
    if (in_multi_ == 0) {
      in_multi_ = -1;
      return {pick(5) == 0 ? "DISCARD" : "EXEC"};
    }
    if (in_multi_ > 0) --in_multi_;
    std::vector<std::string> w = command();
    if (pick(40) == 0 && w.size() > 1) w.pop_back();
    return w;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  template <class T>
  const T& one(const std::vector<T>& v) {
    return v[static_cast<size_t>(pick(static_cast<int>(v.size())))];
  }
  std::string key() { return one<std::string>({"{b}a", "{b}b", "{b}c", "{b}n", "{b}list"}); }
  std::string offset() {
    return one<std::string>({"0", "1", "7", "8", "15", "31", "63", "64", "100", "-1", "x", "",
                             "4294967296", "8000000", std::to_string(pick(200))});
  }
  std::string index() {
    return one<std::string>({"0", "1", "-1", "-2", "2", "5", "-100", "100", "x", "3", "-5",
                             std::to_string(pick(40) - 20)});
  }
  std::string type() {
    return one<std::string>(
        {"u1", "u3", "u8", "i8", "u16", "i16", "i5", "u63", "i64", "u64", "i65", "x8", "u0", ""});
  }
  std::string field_offset() {
    std::string o = one<std::string>({"0", "1", "5", "8", "13", "30", "64", "-1", "x"});
    if (pick(4) == 0) o = "#" + o;
    return o;
  }
  std::string value() {
    return one<std::string>({"0", "1", "-1", "5", "100", "127", "128", "-128", "255", "256",
                             "9223372036854775807", "-9223372036854775808", "x", "65535"});
  }
  std::vector<std::string> command() {
    switch (pick(14)) {
      case 0:
      case 1:
      case 2:
        return {"SETBIT", key(), offset(), one<std::string>({"1", "0", "1", "2", "-1", "x"})};
      case 3:
        return {"GETBIT", key(), offset()};
      case 4: {
        std::vector<std::string> w = {"BITCOUNT", key()};
        if (pick(3) != 0) {
          w.push_back(index());
          w.push_back(index());
          if (pick(2) == 0) w.push_back(one<std::string>({"BIT", "byte", "BYTE", "bits"}));
        }
        return w;
      }
      case 5: {
        std::vector<std::string> w = {"BITPOS", key(), one<std::string>({"0", "1", "2", "x"})};
        const int n = pick(5);
        if (n >= 1) w.push_back(index());
        if (n >= 2) w.push_back(index());
        if (n >= 3) w.push_back(one<std::string>({"BIT", "BYTE", "bit", "no"}));
        return w;
      }
      case 6:
      case 7: {
        std::vector<std::string> w = {pick(6) == 0 ? "BITFIELD_RO" : "BITFIELD", key()};
        for (int n = 1 + pick(3); n > 0; --n) {
          switch (pick(5)) {
            case 0:
              w.push_back("OVERFLOW");
              w.push_back(one<std::string>({"WRAP", "SAT", "FAIL", "sat", "BAD"}));
              break;
            case 1:
              w.push_back("GET");
              w.push_back(type());
              w.push_back(field_offset());
              break;
            case 2:
              w.push_back("SET");
              w.push_back(type());
              w.push_back(field_offset());
              w.push_back(value());
              break;
            default:
              w.push_back(one<std::string>({"INCRBY", "incrby", "BOGUS"}));
              w.push_back(type());
              w.push_back(field_offset());
              w.push_back(value());
          }
        }
        return w;
      }
      case 8: {
        std::vector<std::string> w = {"BITOP",
                                      one<std::string>({"AND", "or", "XOR", "NOT", "NAND"}), key()};
        for (int n = 1 + pick(3); n > 0; --n) w.push_back(key());
        return w;
      }
      case 9: {
        std::vector<std::string> w = {"LCS", key(), key()};
        for (int n = pick(4); n > 0; --n) {
          const std::string o =
              one<std::string>({"LEN", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "bad"});
          w.push_back(o);
          if (o == "MINMATCHLEN") w.push_back(one<std::string>({"0", "1", "2", "4", "-1", "x"}));
        }
        return w;
      }
      case 10:
        return {"SET", key(),
                one<std::string>({"ohmytext", "mynewtext", "12345", "-7", "", "\xff\x01\x80",
                                  "abcdefghijklmnop", "0"})};
      case 11:
        return {one<std::string>({"GET", "STRLEN", "OBJECT", "TYPE"}), key()};
      case 12:
        return {"RPUSH", "{b}list", "x"};
      default:
        return {one<std::string>({"DEL", "INCR", "APPEND"}), key(), "7"};
    }
  }

  std::mt19937_64 rng_;
  int in_multi_ = -1;
};

TEST(BitsDiff, SeededSequencesAnswerAsRedisServerDoes) {
  RedisServer redis;
  // (Redis's 512 MB bound on a bit offset, and on LCS's table)
  NodeProcess node(
      {"--shards", "4", "--proto-max-bulk-len", "536870912", "--max-query-bytes", "536870912"});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  std::vector<uint64_t> seeds = {1, 2, 3, 99, 20261207};
  int commands = 2500;
  if (const char* s = std::getenv("FG_DIFF_SEED")) seeds = {std::strtoull(s, nullptr, 10)};
  if (const char* n = std::getenv("FG_DIFF_COMMANDS")) commands = std::atoi(n);
  for (uint64_t seed : seeds) {
    for (Client* c : {&fg, &rc}) ask(*c, {"FLUSHALL"});
    BitsGenerator gen(seed);
    std::deque<std::string> recent;
    for (int i = 0; i < commands; ++i) {
      std::vector<std::string> w = gen.next();
      if (w[0] == "OBJECT") w = {"OBJECT", "ENCODING", w[1]};
      if (recent.size() == 16) recent.pop_front();
      recent.push_back(printable(w));
      const std::string a = ask(fg, w), b = ask(rc, w);
      ASSERT_FALSE(a.empty()) << "Floodgate closed the connection after " << printable(w);
      if (a != b) {
        std::string before;
        for (const auto& c : recent) before += "\n    " + c;
        FAIL() << "seed " << seed << ", command " << i << ": " << printable(w)
               << "\n  floodgate: " << a << "\n  redis:     " << b << "\n  after:" << before;
      }
    }
  }
}

// proto-max-bulk-len raised on a running node (CONFIG SET): an argument, a SETRANGE and a
// SETBIT past the old bound then pass, below max-query-bytes; lowered again, they are refused.
TEST(Bits, ProtoMaxBulkLenIsRaisedAtRuntime) {
  NodeProcess node({"--proto-max-bulk-len", "1048576", "--max-query-bytes", "16777216"});
  ASSERT_TRUE(node.alive());
  Client c(node.port());
  const std::string big(3'000'000, 'a');
  const char kTooLong[] = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
  EXPECT_EQ(ask(c, {"SETRANGE", "s", "2000000", "x"}), kTooLong);
  EXPECT_EQ(ask(c, {"SETBIT", "b", "16000000", "1"}),
            "-ERR bit offset is not an integer or out of range\r\n");
  EXPECT_EQ(ask(c, {"CONFIG", "SET", "proto-max-bulk-len", "8000000"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"CONFIG", "GET", "proto-max-bulk-len"}),
            "*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n8000000\r\n");
  EXPECT_EQ(ask(c, {"SETRANGE", "s", "2000000", "x"}), ":2000001\r\n");
  EXPECT_EQ(ask(c, {"SETBIT", "b", "16000000", "1"}), ":0\r\n");
  EXPECT_EQ(ask(c, {"SET", "arg", big}), "+OK\r\n");  // (one argument of 3 MB, read whole)
  EXPECT_EQ(ask(c, {"STRLEN", "arg"}), ":3000000\r\n");
  EXPECT_EQ(ask(c, {"CONFIG", "SET", "proto-max-bulk-len", "1048576"}), "+OK\r\n");
  EXPECT_EQ(ask(c, {"APPEND", "s", "more"}), kTooLong);
  // (an argument's length past it is refused as it is read: the 3 MB need not be sent)
  Client d(node.port());
  ASSERT_TRUE(d.send("*3\r\n$3\r\nSET\r\n$3\r\narg\r\n$3000000\r\n"));
  EXPECT_EQ(read_value(d), "-ERR Protocol error: invalid bulk length\r\n");
}

}  // namespace
}  // namespace fg::testing
