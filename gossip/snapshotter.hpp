// A node's state on disk (the `dir` setting): saving every key its shards hold and the
// settings book to one file (state_file.hpp) — periodically, on demand, and at shutdown —
// and reading it back at start. A save copies each shard's keys in one short step per
// shard (the shards go on serving between steps) and encodes and writes them on a thread
// of its own, so no shard waits for the disk.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "book.hpp"
#include "clock.hpp"
#include "result.hpp"
#include "shard_pool.hpp"
#include "state_file.hpp"

namespace fg {

struct SnapshotterConfig {
  std::string path;     // the file (dir + dbfilename)
  std::string node_id;  // written into the file ("standalone" out of cluster mode)
  bool cluster = false;
  std::function<uint64_t()> epoch;  // the slot table's epoch now (null: 0)
  // Encode and write on the thread that finished the copy, not a thread of its own (a
  // polled node, which starts no threads: node/README.md, The simulator).
  bool write_inline = false;
};

struct SnapshotStatus {
  bool in_progress = false;
  bool last_ok = true;            // the last save's outcome (true before any)
  int64_t last_save_ms = 0;       // Unix ms of the last good save (or of the file loaded)
  int64_t last_duration_ms = -1;  // of the last save, good or not
  int64_t last_keys = 0;
  int64_t last_bytes = 0;
  uint64_t saves_ok = 0;
  uint64_t saves_failed = 0;
  std::string last_error;
};

class Snapshotter {
 public:
  Snapshotter(SnapshotterConfig cfg, ShardPool& pool, Book& book, const Clock& clock);
  ~Snapshotter();  // waits for a save under way

  // Takes `<file>.lock` for this process's life, so two nodes never write one file; or why
  // not (another process holds it).
  Status lock();
  // Where the file's table epoch comes from (cluster mode; before the first save).
  void set_epoch_source(std::function<uint64_t()> f) { cfg_.epoch = std::move(f); }
  // What loading the file found.
  enum class Loaded { kNone, kLoaded };
  // Reads and checks the file: none there, loaded into `out`, or refused, saying why; a
  // refused file is renamed aside (`<file>.refused-<ms>`) so the next save does not
  // overwrite it, and nothing of it is used.
  Result<Loaded> load(SnapshotData& out);

  // Starts a save; false if one is under way. `done(ok, why)` runs when the file is
  // written (or not), on the saving thread. Any thread.
  bool save(std::function<void(bool ok, const std::string& why)> done = nullptr);
  // Saves and waits for it (after a save already under way, if any). Any thread but a
  // shard's.
  Status save_and_wait();
  SnapshotStatus status() const;
  const std::string& path() const { return cfg_.path; }

 private:
  void write(std::vector<std::vector<EntrySnapshot>> per_shard, int64_t started_ms,
             std::function<void(bool, const std::string&)> done);

  SnapshotterConfig cfg_;
  ShardPool& pool_;
  Book& book_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  SnapshotStatus status_;
  std::thread writer_;
  int lock_fd_ = -1;
};

}  // namespace fg
