// The cluster-wide settings book: last writer wins, deletions are tombstones, and merging
// in any order ends with the same book (equal digests).
#include "book.hpp"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(Book, MergingInAnyOrderConverges) {
  Book a("a"), b("b"), c("c");
  a.put("policy/free", "sliding_log 100 60000", false, 1000);
  b.put("policy/free", "sliding_log 200 60000", false, 2000);  // later: wins
  c.put("pattern/user:*", "free", false, 1500);
  c.put("policy/old", "", true, 1600);  // a tombstone travels too
  Book x("x"), y("y");
  for (Book* from : {&a, &b, &c}) x.merge(from->entries());
  for (Book* from : {&c, &b, &a}) y.merge(from->entries());
  EXPECT_EQ(x.digest(), y.digest());
  EXPECT_EQ(x.entries().at("policy/free").value, "sliding_log 200 60000");
  EXPECT_TRUE(x.entries().at("policy/old").deleted);
  EXPECT_EQ(x.merge(y.entries()), 0u);  // nothing new
}

TEST(Book, AWriteAlwaysSupersedesWhatTheNodeHasSeen) {
  Book a("a");
  BookEntries far;
  far["policy/p"] = BookEntry{"fixed_window 1 1000", 5000, "z", false};  // a clock ahead
  a.merge(far);
  a.put("policy/p", "fixed_window 2 1000", false, 1000);  // our clock is behind
  const BookEntry e = a.entries().at("policy/p");
  EXPECT_EQ(e.value, "fixed_window 2 1000");
  EXPECT_EQ(e.version, 5001u);
  a.put("policy/p", "", true, 1000);
  EXPECT_TRUE(a.entries().at("policy/p").deleted);
  EXPECT_EQ(a.entries().at("policy/p").version, 5002u);
}

TEST(Book, WireFormRoundTripsAndListenersHearChanges) {
  Book a("a");
  int heard = 0;
  const int id = a.listen([&] { ++heard; });
  a.put("override/k", "free", false, 10);
  EXPECT_EQ(heard, 1);
  const std::string binary("override/\xff\xfe\0k", 13);  // keys are any bytes
  a.put(binary, "free", false, 11);
  EXPECT_EQ(heard, 2);
  BookEntries back;
  ASSERT_TRUE(Book::decode(Book::encode(a.entries()), back));
  EXPECT_EQ(back.at(binary).value, "free");
  Book b("b");
  b.merge(back);
  EXPECT_EQ(a.digest(), b.digest());
  a.unlisten(id);
  a.put("override/k", "other", false, 20);
  EXPECT_EQ(heard, 2);
  EXPECT_FALSE(Book::decode("\xff\xff\xff", back));
}

TEST(Book, ClearingAPrefixDropsItsEntriesEverywhereWithoutTombstones) {
  Book a("a"), b("b");
  a.put("script/1", "return 1", false, 1000);
  a.put("script/2", "return 2", false, 9000);  // stamped by a clock far ahead
  a.put("policy/p", "fixed_window 1 1000", false, 1000);
  b.merge(a.entries());
  b.clear_prefix("script/", 2000);  // clears both, the one from the future too
  BookEntries e = b.entries();
  EXPECT_EQ(e.count("script/1") + e.count("script/2"), 0u);
  EXPECT_EQ(e.count("policy/p"), 1u);
  EXPECT_EQ(e.size(), 2u);  // the policy and one marker, no tombstone per script
  // Whichever arrives first, marker or old entries, the books end equal.
  Book c("c");
  c.merge(b.entries());
  c.merge(a.entries());
  a.merge(b.entries());
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_EQ(c.digest(), b.digest());
  // A write after the clear stays, even from a node whose clock is behind the marker.
  a.put("script/1", "return 1", false, 500);
  b.merge(a.entries());
  EXPECT_EQ(b.entries().count("script/1"), 1u);
  EXPECT_EQ(a.digest(), b.digest());
  std::vector<std::string> seen;
  b.scan("script/", [&](const std::string& k, const std::string&) { seen.push_back(k); });
  EXPECT_EQ(seen, std::vector<std::string>{"script/1"});
}

}  // namespace
}  // namespace fg
