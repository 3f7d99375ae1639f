// RESP parser: every split point of a pipelined stream, and the malformed inputs of
// Redis's tests/unit/protocol.tcl with Redis's error texts.
#include "resp_parser.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

using namespace std::string_literals;

using Cmds = std::vector<std::vector<std::string>>;

// Feeds `input` in pieces split at `cuts` (the way bytes arrive from a socket) and
// collects commands; returns the error text if one occurred.
std::string feed(RespParser& p, const std::string& input, const std::vector<size_t>& cuts,
                 Cmds& out) {
  std::string buf;
  size_t begin = 0;
  std::vector<std::string_view> args;
  std::deque<std::string> arena;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(input.size());
  for (size_t end : ends) {
    buf.append(input, from, end - from);
    from = end;
    for (;;) {
      ParseResult r = p.parse(buf.data() + begin, buf.size() - begin, args, arena);
      if (r.status == ParseStatus::kError) return std::string(r.error);
      if (r.status == ParseStatus::kNeedMore) break;
      begin += r.consumed;
      if (!args.empty()) out.emplace_back(args.begin(), args.end());
    }
  }
  return "";
}

const std::string kStream =
    "*3\r\n$11\r\nCL.THROTTLE\r\n$4\r\nuser\r\n$2\r\n15\r\n"
    "*1\r\n$4\r\nPING\r\n"
    "PING inline\r\n"
    "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
    "*0\r\n"
    "\r\n"
    "ECHO \"a b\\x41\\n\" 'c\\'d'\n"
    "*2\r\n$4\r\nECHO\r\n$7\r\nbin\r\n\0x\r\n"s;

const Cmds kExpected = {{"CL.THROTTLE", "user", "15"},
                        {"PING"},
                        {"PING", "inline"},
                        {"ECHO", ""},
                        {"ECHO", "a bA\n", "c'd"},
                        {"ECHO", std::string("bin\r\n\0x", 7)}};

TEST(RespParser, WholeStream) {
  RespParser p;
  Cmds out;
  const std::string in(kStream.data(), kStream.size());
  EXPECT_EQ(feed(p, in, {}, out), "");
  EXPECT_EQ(out, kExpected);
}

TEST(RespParser, SplitAtEveryByteBoundary) {
  std::string in = kStream;
  for (size_t cut = 1; cut < in.size(); ++cut) {
    RespParser p;
    Cmds out;
    ASSERT_EQ(feed(p, in, {cut}, out), "") << "cut at " << cut;
    ASSERT_EQ(out, kExpected) << "cut at " << cut;
  }
}

TEST(RespParser, OneByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  RespParser p;
  Cmds out;
  EXPECT_EQ(feed(p, kStream, cuts, out), "");
  EXPECT_EQ(out, kExpected);
}

struct BadCase {
  std::string input;
  std::string error;
};

TEST(RespParser, MalformedInputGetsRedisErrors) {
  const std::string huge_count(70000, '1');
  const BadCase cases[] = {
      {"*20000000\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*3000000000\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*blabla\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1\r\n$20000000000\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$blabla\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$-5\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\nfoo\r\n", "ERR Protocol error: expected '$', got 'f'"},
      {"set \"\"\"test-key\"\"\" test-value\r\n",
       "ERR Protocol error: unbalanced quotes in request"},
      {"set \"unterminated\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"*" + huge_count, "ERR Protocol error: too big mbulk count string"},
      {"*1\r\n$" + huge_count, "ERR Protocol error: too big bulk count string"},
      {std::string(70000, 'a'), "ERR Protocol error: too big inline request"},
  };
  for (const auto& c : cases) {
    RespParser p;
    Cmds out;
    EXPECT_EQ(feed(p, c.input, {}, out), c.error) << c.input.substr(0, 40);
    EXPECT_TRUE(out.empty());
  }
}

TEST(RespParser, NeedsMoreUntilTheCommandIsWhole) {
  RespParser p;
  std::vector<std::string_view> args;
  std::deque<std::string> arena;
  const std::string part = "*2\r\n$4\r\nECHO\r\n$5\r\nhel";
  EXPECT_EQ(p.parse(part.data(), part.size(), args, arena).status, ParseStatus::kNeedMore);
  EXPECT_TRUE(p.in_progress());
  const std::string whole = part + "lo\r\n";
  ParseResult r = p.parse(whole.data(), whole.size(), args, arena);
  ASSERT_EQ(r.status, ParseStatus::kCommand);
  EXPECT_EQ(r.consumed, whole.size());
  EXPECT_EQ(args[1], "hello");
  EXPECT_FALSE(p.in_progress());
}

TEST(RespParser, LimitsAreSetAtConstruction) {
  ParserLimits lim;
  lim.max_bulk_len = 8;
  lim.max_args = 2;
  RespParser p(lim);
  Cmds out;
  EXPECT_EQ(feed(p, "*1\r\n$9\r\n123456789\r\n", {}, out),
            "ERR Protocol error: invalid bulk length");
  RespParser q(lim);
  EXPECT_EQ(feed(q, "*3\r\n", {}, out), "ERR Protocol error: invalid multibulk length");
}

}  // namespace
}  // namespace fg
