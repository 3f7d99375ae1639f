// Saving a node's state to disk and reading it back (snapshotter.hpp).
#include "snapshotter.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>

namespace fg {

Snapshotter::Snapshotter(SnapshotterConfig cfg, ShardPool& pool, Book& book, const Clock& clock)
    : cfg_(std::move(cfg)), pool_(pool), book_(book), clock_(clock) {}

Snapshotter::~Snapshotter() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return !status_.in_progress; });
  lock.unlock();
  if (writer_.joinable()) writer_.join();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Snapshotter::lock() {
  const std::string path = cfg_.path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"cannot create " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    return Error{
        cfg_.path + " is in use by another floodgate process" +
        (n > 0 ? " (pid " + std::string(pid, static_cast<size_t>(n)) + ")" : std::string()) +
        ": give each node its own dir or dbfilename"};
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // (the pid is only for the message above)
  }
  lock_fd_ = fd;
  return {};
}

Result<Snapshotter::Loaded> Snapshotter::load(SnapshotData& out) {
  bool missing = false;
  std::string why;
  if (Result<std::string> bytes = read_whole_file(cfg_.path, &missing); !bytes) {
    if (missing) return Loaded::kNone;
    why = bytes.error();
  } else if (Result<SnapshotData> d = decode_snapshot_file(*bytes); !d) {
    why = d.error();
  } else if (d->cluster != cfg_.cluster) {
    why = d->cluster ? "written by a cluster node (it holds only that node's share of the "
                       "keys); this node is standalone"
                     : "written by a standalone node; this node is a cluster member";
  } else {
    out = std::move(d.value());
    std::lock_guard<std::mutex> lock(mu_);
    status_.last_save_ms = out.saved_at_ms;
    return Loaded::kLoaded;
  }
  const std::string aside = cfg_.path + ".refused-" + std::to_string(clock_.now_ns() / 1'000'000);
  if (!missing && std::rename(cfg_.path.c_str(), aside.c_str()) == 0) {
    why += "; kept as " + aside;
  }
  out = SnapshotData();
  return Error{why};
}

bool Snapshotter::save(std::function<void(bool ok, const std::string& why)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.in_progress) return false;
    status_.in_progress = true;
  }
  if (writer_.joinable()) writer_.join();  // (the last save's thread has finished its work)
  const int64_t started_ms = clock_.now_ns() / 1'000'000;
  auto job = std::make_shared<CopyJob>();
  job->now_ns = clock_.now_ns();
  job->done = [this, started_ms, done = std::move(done)](CopyJob& j) mutable {
    if (cfg_.write_inline) return write(std::move(j.per_shard), started_ms, std::move(done));
    // (on a shard thread: the encoding and the disk are the writer's)
    std::lock_guard<std::mutex> lock(mu_);
    writer_ = std::thread(
        [this, per_shard = std::move(j.per_shard), started_ms, done = std::move(done)]() mutable {
          write(std::move(per_shard), started_ms, std::move(done));
        });
  };
  pool_.copy(job);
  return true;
}

void Snapshotter::write(std::vector<std::vector<EntrySnapshot>> per_shard, int64_t started_ms,
                        std::function<void(bool, const std::string&)> done) {
  // Encoding a few hundred MB takes a core for a while: the I/O and shard threads come first.
  if (!cfg_.write_inline) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  SnapshotData d;
  d.node_id = cfg_.node_id;
  d.cluster = cfg_.cluster;
  d.epoch = cfg_.epoch ? cfg_.epoch() : 0;
  d.saved_at_ms = started_ms;
  d.book = book_.entries();
  size_t n = 0;
  for (const auto& part : per_shard) n += part.size();
  d.entries.reserve(n);
  for (auto& part : per_shard)
    for (auto& e : part) d.entries.push_back(std::move(e));
  const std::string bytes = encode_snapshot_file(d);
  const Status written = write_file_atomically(cfg_.path, bytes);
  const bool ok = written.ok();
  const std::string why = written.error();
  const int64_t took = clock_.now_ns() / 1'000'000 - started_ms;
  if (ok) {
    spdlog::info("state saved to {}: {} keys, {} bytes, {} ms", cfg_.path, n, bytes.size(), took);
  } else {
    spdlog::error("saving state to {} failed: {}", cfg_.path, why);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.last_ok = ok;
    status_.last_duration_ms = took;
    if (ok) {
      status_.last_save_ms = started_ms;
      status_.last_keys = static_cast<int64_t>(n);
      status_.last_bytes = static_cast<int64_t>(bytes.size());
      ++status_.saves_ok;
      status_.last_error.clear();
    } else {
      ++status_.saves_failed;
      status_.last_error = why;
    }
  }
  if (done) done(ok, why);
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.in_progress = false;
  }
  idle_.notify_all();
}

Status Snapshotter::save_and_wait() {
  for (;;) {
    auto result = std::make_shared<std::promise<std::pair<bool, std::string>>>();
    auto fut = result->get_future();
    if (save([result](bool ok, const std::string& w) { result->set_value({ok, w}); })) {
      auto [ok, w] = fut.get();
      if (!ok) return Error{w};
      return {};
    }
    std::unique_lock<std::mutex> lock(mu_);  // one under way: wait for it, then save anew
    idle_.wait(lock, [&] { return !status_.in_progress; });
  }
}

SnapshotStatus Snapshotter::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

}  // namespace fg
