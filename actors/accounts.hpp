// Who holds what of the node. Every key is charged, in bytes, to an account — the user whose
// request made it — and so are the other things a user can make the node keep (scripts in
// the cache, waiting takes, connections, subscriptions). Every shard and door adds to the
// same node-wide tallies, so each cap is checked against the whole node: maxmemory for
// everyone, and each user's share of every node-wide cap for that user. Account 0 is no
// one's: state that came from elsewhere (a replica's copy, a hand-off, a snapshot, a
// merge), counted in the totals only.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace fg {

class Accounts {
 public:
  static constexpr uint16_t kNone = 0;
  static constexpr size_t kMax = 4096;  // account ids 0..4095 (12 bits in each entry)

  // What is counted per account.
  enum Meter : uint8_t {
    kKeys,
    kBytes,          // the keyspace's bytes (its keys' charges)
    kScripts,        // scripts in the cluster-wide cache it loaded
    kScriptBytes,    // their bodies' bytes
    kWaiters,        // FG.TAKE … WAIT places it holds
    kConnections,    // connections signed in as it
    kSubscriptions,  // channels, patterns and shard channels its connections hear
    kMeters
  };
  // Why a key may not be made, or grow.
  enum class Room : uint8_t { kOk, kNodeMemory, kUserKeys, kUserMemory };

  Accounts();
  ~Accounts();
  Accounts(const Accounts&) = delete;
  Accounts& operator=(const Accounts&) = delete;

  void add(uint16_t account, Meter m, int64_t n) {
    tally(account).used[m].fetch_add(n, std::memory_order_relaxed);
    if (m == kBytes) total_bytes_.fetch_add(n, std::memory_order_relaxed);
  }
  int64_t used(uint16_t account, Meter m) const {
    const Tally* t = find(account);
    return t ? t->used[m].load(std::memory_order_relaxed) : 0;
  }
  // Whether `account` may take `more` of `m` under its cap.
  bool room(uint16_t account, Meter m, int64_t more = 1) const {
    const Tally* t = find(account);
    return !t || t->used[m].load(std::memory_order_relaxed) + more <=
                     t->cap[m].load(std::memory_order_relaxed);
  }
  // A key made (+1) or gone (-1), and the bytes charged or given back: the keyspace's hot
  // path (KeyTable).
  void charge_key(uint16_t account, int64_t keys, int64_t bytes) {
    Tally& t = tally(account);
    if (keys) t.used[kKeys].fetch_add(keys, std::memory_order_relaxed);
    if (bytes) {
      t.used[kBytes].fetch_add(bytes, std::memory_order_relaxed);
      total_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    }
  }
  // What the whole keyspace holds (INFO's used_memory_dataset).
  int64_t total_bytes() const { return total_bytes_.load(std::memory_order_relaxed); }

  // maxmemory (0: none), and one account's cap of a meter (none by default; account 0 is
  // never capped).
  void set_maxmemory(int64_t bytes) { maxmemory_.store(bytes, std::memory_order_relaxed); }
  int64_t maxmemory() const { return maxmemory_.load(std::memory_order_relaxed); }
  void set_cap(uint16_t account, Meter m, int64_t cap);
  int64_t cap(uint16_t account, Meter m) const;

  // Whether `account` may make a new key now: the node under maxmemory, the account under
  // its share of keys and of bytes.
  // `extra_*`: the caller's own changes not yet charged (KeyTable::pending), counted as if
  // they were.
  Room new_key(uint16_t account, int64_t extra_keys = 0, int64_t extra_bytes = 0,
               int64_t extra_total = 0) const;
  // Whether a command may grow what `account` holds (Redis's denyoom commands).
  Room grow(uint16_t account, int64_t extra_bytes = 0, int64_t extra_total = 0) const;

 private:
  struct Tally {
    std::array<std::atomic<int64_t>, kMeters> used{};
    std::array<std::atomic<int64_t>, kMeters> cap{};
    Tally() {
      for (auto& c : cap) c.store(INT64_MAX, std::memory_order_relaxed);
    }
  };
  // Tallies in chunks of 64 accounts, made on first use (a node has a few users; a process
  // may hold many nodes: the simulator's).
  static constexpr size_t kChunk = 64;
  struct alignas(64) Chunk {
    Tally tallies[kChunk];
  };
  Tally& tally(uint16_t account);
  const Tally* find(uint16_t account) const {
    const Chunk* c = chunks_[(account & (kMax - 1)) / kChunk].load(std::memory_order_acquire);
    return c ? &c->tallies[account % kChunk] : nullptr;
  }
  std::array<std::atomic<Chunk*>, kMax / kChunk> chunks_{};
  std::mutex grow_mu_;
  alignas(64) std::atomic<int64_t> total_bytes_{0};
  std::atomic<int64_t> maxmemory_{0};
};

// A key's charge as 20 bits in its entry: a 15-bit mantissa and a 5-bit exponent, so any
// size fits, rounded down by less than 1/16384 (the same rounding both ways: what is added
// for a key is exactly what goes when it goes).
inline uint32_t encode_charge(uint64_t bytes) {
  if (bytes < (1u << 15)) return static_cast<uint32_t>(bytes);
  const int shift = 64 - __builtin_clzll(bytes) - 15;
  return static_cast<uint32_t>(shift) << 15 | static_cast<uint32_t>(bytes >> shift);
}
inline uint64_t decode_charge(uint32_t code) {
  return static_cast<uint64_t>(code & 0x7fff) << (code >> 15 & 31);
}

}  // namespace fg
