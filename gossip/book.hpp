// The cluster-wide book of settings (policies, key patterns, overrides): a last-writer-wins
// map every node holds whole. Writes are stamped with a version (wall-clock milliseconds,
// never below the entry's current version + 1); merging two books keeps, per key, the entry
// with the higher (version, origin, deleted, value), so every node ends with the same book
// whatever order the exchanges happen in. Deletions are tombstones that win like writes.
// A whole family of keys (every key starting with a prefix) is cleared by one marker entry
// instead of a tombstone each: entries under the prefix no newer than the marker are
// dropped wherever the marker arrives, so clearing and reloading do not pile up tombstones.
// Thread-safe: written by command handlers, merged by the cluster thread.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

struct BookEntry {
  std::string value;
  uint64_t version = 0;
  std::string origin;
  bool deleted = false;
};

using BookEntries = std::map<std::string, BookEntry, std::less<>>;

// True if `a` supersedes `b` (the merge rule).
bool book_wins(const BookEntry& a, const BookEntry& b);

class Book {
 public:
  static constexpr size_t kMaxEntries = 100'000;  // tombstones included

  explicit Book(std::string origin) : origin_(std::move(origin)) {}

  // Writes (or, with deleted, removes) `key` now. False when the book is full.
  bool put(const std::string& key, std::string value, bool deleted, uint64_t now_ms);
  // Removes every entry whose key starts with `prefix` (as of now, everywhere): writes a
  // marker newer than all of them. Later writes under the prefix stay. False when full.
  bool clear_prefix(const std::string& prefix, uint64_t now_ms);
  // Calls fn(key, value) for the live entries whose key starts with `prefix`, in key
  // order, under the book's lock (fn must not touch the book).
  void scan(std::string_view prefix,
            const std::function<void(const std::string&, const std::string&)>& fn) const;
  // Merges entries from elsewhere (a peer, a file); returns how many changed this book.
  size_t merge(const BookEntries& in);
  BookEntries entries() const;
  // Identifies the book's content: equal digests, equal books (with overwhelming odds).
  uint64_t digest() const;
  size_t size() const;
  const std::string& origin() const { return origin_; }

  // Called after every change (local or merged), on the writer's thread. A listener may
  // read the book but not (un)listen. After unlisten(id) returns, it is never called again.
  using Listener = std::function<void()>;
  int listen(Listener fn);
  void unlisten(int id);

  // BookMsg wire form.
  static std::string encode(const BookEntries& e);
  static bool decode(const std::string& bytes, BookEntries& out);

 private:
  void changed();
  // Under mu_: the version a write under `key` must exceed to outlive clear markers.
  uint64_t cleared_at(const std::string& key) const;
  // Under mu_: drops the entries clear markers supersede; how many.
  size_t apply_markers();
  mutable std::mutex mu_;
  std::string origin_;
  BookEntries entries_;
  uint64_t digest_ = 0;
  std::mutex listeners_mu_;  // held while listeners run, so unlisten waits for them
  std::map<int, Listener> listeners_;
  int next_listener_ = 1;
};

}  // namespace fg
