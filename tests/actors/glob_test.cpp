// Glob patterns: Redis's answers (stringmatchlen's edge cases), a second matcher on random
// patterns, and the patterns built to crash or stall a node, answered in bounded work.
#include "glob.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "glob_reference.hpp"

namespace fg {
namespace {

TEST(Glob, RedisAnswers) {
  struct Case {
    const char* p;
    const char* s;
    bool nocase, want;
  };
  const Case cases[] = {
      {"*", "save", true, true},
      {"max*", "maxclients", true, true},
      {"SAVE", "save", true, true},
      {"SAVE", "save", false, false},
      {"s?ve", "save", false, true},
      {"[st]ave", "save", false, true},
      {"[^s]ave", "save", false, false},
      {"max", "maxclients", false, false},
      // An empty string matches only the empty pattern (stringmatchlen's loop never starts).
      {"*", "", false, false},
      {"**", "", false, false},
      {"", "", false, true},
      {"", "a", false, false},
      {"a*", "a", false, true},
      {"a**", "a", false, true},
      {"*a", "a", false, true},
      {"a*b", "ab", false, true},
      {"a*b", "a", false, false},
      // Classes: ranges either way round, escapes, an unclosed class ends the pattern, an
      // escape in a class is exact even without case.
      {"[z-a]", "m", false, true},
      {"[a-]x", "x", false, true},  // (the range takes the ']': the class runs to the end)
      {"[\\]]", "]", false, true},
      {"[]a", "a", false, false},
      {"[abc", "b", false, true},
      {"[abc", "bz", false, false},
      {"[^", "q", false, true},
      {"[", "q", false, false},
      {"[\\A]", "a", true, false},
      {"[A-C]", "b", true, true},
      {"\\*", "*", false, true},
      {"\\*", "a", false, false},
      {"a\\", "a\\", false, true},
      {"\\", "\\", false, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(glob_match(c.p, c.s, c.nocase), c.want) << c.p << " ~ " << c.s;
    EXPECT_EQ(reference::glob_match(c.p, c.s, c.nocase), c.want) << "(reference) " << c.p;
  }
}

TEST(Glob, AgreesWithTheSecondMatcherOnRandomPatterns) {
  std::mt19937_64 rng(20261128);
  const std::string pattern_bytes = "ab*?[]^-\\A*a";
  const std::string string_bytes = "abA-]^[*\\";
  auto draw = [&](const std::string& from, size_t max) {
    std::string out(rng() % (max + 1), ' ');
    for (char& c : out) c = from[rng() % from.size()];
    return out;
  };
  for (int i = 0; i < 300'000; ++i) {
    const std::string p = draw(pattern_bytes, 10), s = draw(string_bytes, 12);
    const bool nocase = (i & 7) == 0;
    ASSERT_EQ(glob_match(p, s, nocase), reference::glob_match(p, s, nocase))
        << "pattern " << p << " string " << s << " nocase " << nocase;
  }
}

TEST(Glob, TheNestingLimitIsRedisOwn) {
  std::string p;
  for (int i = 0; i < 1000; ++i) p += "*a";
  const std::string s(1500, 'a');
  EXPECT_TRUE(glob_match(p + "*", s, false));  // 1000 inner star runs, and one at the end
  EXPECT_TRUE(glob_match(p, s, false));
  EXPECT_FALSE(glob_match(p + "*a", s, false));  // 1001: nothing matches, as in Redis
  EXPECT_FALSE(reference::glob_match(p + "*a", s, false));
}

// The attacks: each answered, without recursion (a deep stack would crash the node) and
// in work bounded by its inputs' size (a stall would hold every client of the thread).
TEST(Glob, PatternsBuiltToCrashOrStallAreAnsweredInBoundedWork) {
  std::string many;
  for (int i = 0; i < 100'000; ++i) many += "*a";
  EXPECT_FALSE(glob_match(many, std::string(200'000, 'a'), false));
  EXPECT_FALSE(glob_match(many, std::string(200'000, 'a') + "b", false));
  const std::string key = "app:" + std::string(100, 'a');
  EXPECT_FALSE(glob_match("app:*a*a*a*a*a*b", key, false));
  EXPECT_FALSE(glob_match("app:*a*a*a*a*a*a*a*a*b", key, false));
  EXPECT_TRUE(glob_match("app:*a*a*a*a*a*a*a*a*", key, false));
  // A long run that nearly matches at every place: the answer needs the string's length
  // times the run's, and the bound gives up on it as no match (Redis would take the time).
  const std::string run = "*" + std::string(2000, 'a') + "b";
  const std::string subject = std::string(100'000, 'a') + "b";
  EXPECT_TRUE(glob_match_within(run, subject, false, int64_t{1} << 40));
  EXPECT_FALSE(glob_match(run, subject, false));
  // A class read at every try costs its length each time: bounded the same way.
  const std::string wide = "*[" + std::string(50'000, 'c') + "]b";
  EXPECT_FALSE(glob_match(wide, std::string(100'000, 'a'), false));
}

// A pattern read once answers as glob_match does: the Redis cases, and random patterns and
// strings over the bytes that make classes, ranges, escapes and stars.
TEST(GlobPattern, AnswersAsGlobMatch) {
  std::mt19937_64 rng(20261207);
  const std::string pattern_bytes = "ab*?[]^-\\A*a\x80\xff";
  const std::string string_bytes = "abA-]^[*\\\x80\xff";
  auto draw = [&](const std::string& from, size_t max) {
    std::string out(rng() % (max + 1), ' ');
    for (char& c : out) c = from[rng() % from.size()];
    return out;
  };
  for (int i = 0; i < 200'000; ++i) {
    const std::string p = draw(pattern_bytes, 10);
    const bool nocase = (i & 7) == 0;
    const GlobPattern g(p, nocase);
    for (int k = 0; k < 3; ++k) {
      const std::string s = draw(string_bytes, 12);
      ASSERT_EQ(g.match(s), glob_match(p, s, nocase))
          << "pattern " << p << " string " << s << " nocase " << nocase;
    }
  }
  EXPECT_TRUE(GlobPattern("*").any());
  EXPECT_FALSE(GlobPattern("*").match(""));
  EXPECT_TRUE(GlobPattern("").match(""));
  EXPECT_TRUE(GlobPattern("[a-]x").match("x"));
  EXPECT_TRUE(GlobPattern("[A-C]", true).match("b"));
  EXPECT_FALSE(GlobPattern("[\\A]", true).match("a"));
}

// What a scan pays per key for a hostile pattern: a 64 KB class is one table, read once; a
// pattern with more fixed tokens than a key can have bytes is answered without reading on.
TEST(GlobPattern, WorkPerStringDoesNotGrowWithThePatternsBytes) {
  const std::string wide = "*[" + std::string(64 * 1024, 'c') + "]b";
  const GlobPattern g(wide);
  const std::string key(4000, 'a');
  int64_t steps = 0;
  ASSERT_FALSE(g.match(key, &steps));
  // (each byte of the key tried against the class once, then given up: the class's 64 KB
  // are not read again per try, as glob_match reads them)
  EXPECT_LE(steps, 2 * 4000);
  EXPECT_TRUE(g.match("xcb"));
  const GlobPattern too_long(std::string(5000, '?'), false, 4096);
  EXPECT_FALSE(too_long.match(std::string(4096, 'a')));
  std::string stars;
  for (int i = 0; i < 1001; ++i) stars += "*a";
  EXPECT_FALSE(GlobPattern(stars).match(std::string(3000, 'a')));
  EXPECT_TRUE(GlobPattern(stars.substr(2)).match(std::string(3000, 'a')));
}

}  // namespace
}  // namespace fg
