// A node's state on disk (the `dir` setting): every key its shards hold and the settings
// book, as one file written atomically and checked whole before anything is loaded.
//
//   "FGSNAP01"  magic (8 bytes)
//   u32 n, SnapshotHead (state.proto), n bytes
//   (u32 n, StateChunk, n bytes)...          at most 4 MiB each
//   u32 0xffffffff                           end of chunks
//   SHA-256 of every byte before it          32 bytes
//
// Integers are little-endian. A file that is short, foreign, altered or of a newer version
// is refused as a whole with a reason; nothing of it is used.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "book.hpp"
#include "entry_snapshot.hpp"
#include "result.hpp"

namespace fg {

struct SnapshotData {
  std::string node_id;
  bool cluster = false;
  uint64_t epoch = 0;
  int64_t saved_at_ms = 0;
  BookEntries book;
  std::vector<EntrySnapshot> entries;
};

std::string encode_snapshot_file(const SnapshotData& d);
// The snapshot `bytes` holds, or why it is not a whole snapshot this build understands.
Result<SnapshotData> decode_snapshot_file(std::string_view bytes);

// Writes `bytes` to `path` so that a reader sees the old file or the new one, never part:
// a temporary file beside it, fsync, rename over `path`, fsync of the directory.
Status write_file_atomically(const std::string& path, std::string_view bytes);
// The whole file, or why it cannot be read (errno's words); `*missing` (if given) says
// whether there is no such file.
Result<std::string> read_whole_file(const std::string& path, bool* missing = nullptr);

}  // namespace fg
