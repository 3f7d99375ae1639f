// The cluster-wide script cache: SCRIPT LOAD or EVAL on any node makes the script known to
// every node. Bodies live in the settings book (gossip/book.hpp) under "script/<sha1>", so
// they travel as policies do: pushed to every live member at once, equalised by the book
// digests in gossip, and fetched whole by a node that (re)joins. SCRIPT FLUSH clears the
// book's "script/" prefix, on every node.
//
// The request path reads a published catalog: a script run refreshes its held copy with
// one atomic read when nothing changed (as PolicyRegistry does for policies).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "book.hpp"
#include "clock.hpp"
#include "result.hpp"

namespace fg {

// Who loads a script, and its share of the cache (the first to load a script owns it).
struct ScriptOwner {
  std::string_view name;  // empty: no one's (an operator's: counted in the cap only)
  int64_t max_scripts = INT64_MAX;
  int64_t max_bytes = INT64_MAX;
};

class ScriptCache {
 public:
  struct Catalog {
    // The body under `sha` (40 lower-case hex digits), or null. No allocation.
    const std::string* find(std::string_view sha) const;
    bool has(std::string_view sha) const { return find(sha) != nullptr; }
    size_t size() const { return bodies.size(); }

    using Sha = std::array<char, 40>;
    struct ShaHash {
      size_t operator()(const Sha& s) const {
        return std::hash<std::string_view>{}(std::string_view(s.data(), s.size()));
      }
    };
    std::unordered_map<Sha, std::string, ShaHash> bodies;
    size_t bytes = 0;  // the bodies' bytes
    // Per user that loaded scripts: how many it loaded and their bytes (its share).
    std::unordered_map<std::string, std::pair<size_t, size_t>> by_owner;
    // Moves on whenever a script left the cache (SCRIPT FLUSH anywhere): Lua states drop
    // the functions they compiled, so EVALSHA of a flushed script answers NOSCRIPT.
    uint64_t generation = 0;
  };

  // The cap counts every script the cluster's book holds. Nodes adding at the same moment
  // near the cap may pass it by what they add in that moment.
  ScriptCache(Book& book, const Clock& clock, size_t max_scripts, size_t max_bytes);
  ~ScriptCache();
  ScriptCache(const ScriptCache&) = delete;
  ScriptCache& operator=(const ScriptCache&) = delete;

  using Owner = ScriptOwner;
  // Keeps `body` (already compiled, its sha1 `sha`) cluster-wide; an error when the cache
  // is at its cap, or `owner` at its share. Known scripts cost nothing.
  Status add(const std::string& sha, std::string_view body, const Owner& owner = {});
  // SCRIPT FLUSH: every script, on every node.
  void flush();

  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::shared_ptr<const Catalog> snapshot() const { return std::atomic_load(&catalog_); }
  // `held` refreshed if the catalog changed since `held_version` (which it updates).
  void refresh(std::shared_ptr<const Catalog>& held, uint64_t& held_version) const {
    const uint64_t v = version();
    if (held && v == held_version) return;
    held = snapshot();
    held_version = v;
  }
  size_t max_scripts() const { return max_scripts_; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  void rebuild();  // the catalog from the book

  Book& book_;
  const Clock& clock_;
  size_t max_scripts_;
  size_t max_bytes_;
  int listener_ = 0;
  std::mutex mu_;  // serialises rebuilds
  std::shared_ptr<const Catalog> catalog_ = std::make_shared<Catalog>();
  std::atomic<uint64_t> version_{0};
};

}  // namespace fg
