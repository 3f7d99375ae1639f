// Snapshot files: what is written comes back whole; a short, altered, foreign or newer file
// is refused as a whole with a reason; writes replace the file atomically.
#include "state_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace fg {
namespace {

SnapshotData sample(size_t keys) {
  SnapshotData d;
  d.node_id = "node-a";
  d.cluster = true;
  d.epoch = 42;
  d.saved_at_ms = 1'700'000'000'000;
  d.book["policy/free"] = BookEntry{"kind: gcra", 7, "node-a", false};
  d.book["override/k"] = BookEntry{"", 9, "node-b", true};
  for (size_t i = 0; i < keys; ++i) {
    EntrySnapshot s;
    s.key = "key:" + std::to_string(i);
    switch (i % 3) {
      case 0:
        s.kind = Kind::kGcra;
        s.fields = {static_cast<int64_t>(i) * 1000};
        break;
      case 1:
        s.kind = Kind::kString;
        s.value = std::string(100, 'x');
        s.expires_ms = 1'800'000'000'000;
        break;
      default:
        s.kind = Kind::kSlidingLog;
        s.fields = {60'000'000'000};
        s.log = {{1, 1}, {2, 3}};
        break;
    }
    d.entries.push_back(std::move(s));
  }
  return d;
}

TEST(StateFile, WhatIsWrittenComesBackWhole) {
  for (size_t keys : {size_t{0}, size_t{5}, size_t{120'000}}) {  // (the last spans chunks)
    SCOPED_TRACE(keys);
    const SnapshotData d = sample(keys);
    const std::string bytes = encode_snapshot_file(d);
    const Result<SnapshotData> decoded = decode_snapshot_file(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    SnapshotData back = *decoded;
    EXPECT_EQ(back.node_id, "node-a");
    EXPECT_TRUE(back.cluster);
    EXPECT_EQ(back.epoch, 42u);
    EXPECT_EQ(back.saved_at_ms, d.saved_at_ms);
    EXPECT_EQ(back.book.size(), 2u);
    EXPECT_EQ(back.book["policy/free"].value, "kind: gcra");
    EXPECT_TRUE(back.book["override/k"].deleted);
    ASSERT_EQ(back.entries.size(), keys);
    EXPECT_TRUE(back.entries == d.entries);
  }
}

TEST(StateFile, ABrokenFileIsRefusedWholeWithAReason) {
  const std::string bytes = encode_snapshot_file(sample(1000));
  // Truncated anywhere.
  for (size_t len : {size_t{0}, size_t{5}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    const auto r = decode_snapshot_file(std::string_view(bytes).substr(0, len));
    EXPECT_FALSE(r.ok()) << len;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().empty());
    }
  }
  // One byte altered anywhere.
  for (size_t at : {size_t{9}, size_t{40}, bytes.size() / 2, bytes.size() - 3}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    const auto r = decode_snapshot_file(bad);
    ASSERT_FALSE(r.ok()) << at;
    EXPECT_NE(r.error().find("checksum"), std::string::npos) << r.error();
  }
  // Another program's file.
  const auto redis = decode_snapshot_file("REDIS0011" + std::string(100, '\0'));
  ASSERT_FALSE(redis.ok());
  EXPECT_NE(redis.error().find("not a Floodgate snapshot"), std::string::npos) << redis.error();
}

TEST(StateFile, WritesReplaceTheFileAtomically) {
  const std::string dir = ::testing::TempDir() + "fg-state-file-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/dump.fgs";
  ASSERT_TRUE(write_file_atomically(path, encode_snapshot_file(sample(10))).ok());
  ASSERT_TRUE(write_file_atomically(path, encode_snapshot_file(sample(20))).ok());
  bool missing = true;
  const Result<std::string> got = read_whole_file(path, &missing);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_FALSE(missing);
  const Result<SnapshotData> back = decode_snapshot_file(*got);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->entries.size(), 20u);
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) files += f.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary file left behind
  EXPECT_FALSE(read_whole_file(dir + "/none.fgs", &missing).ok());
  EXPECT_TRUE(missing);
  const Status refused = write_file_atomically(dir + "/no/such/dir/x.fgs", "x");
  EXPECT_NE(refused.error().find("cannot create"), std::string::npos) << refused.error();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fg
