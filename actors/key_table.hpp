// The keys of one shard: an open-addressing table of tagged pointers to compact entries.
// Memory per key is a stated target, so an entry is one allocation holding a small header,
// the kind's fixed-size state and the key bytes; no per-key std::string or node.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "accounts.hpp"
#include "entry_pool.hpp"
#include "limit_spec.hpp"

namespace fg {

constexpr size_t kMaxKeyLen = 4096;

// Bits of Entry::flags.
constexpr uint8_t kEntryDirty = 1;     // changed since the replication stream last took it
constexpr uint8_t kEntryInt = 2;       // a string held as an integer (data_ops.cpp)
constexpr uint8_t kEntryDeadline = 4;  // carries a deadline (EXPIRE and friends)
// How redis-server would hold a string that these made, for OBJECT ENCODING (nothing else
// reads them): as text though it reads as an integer (INCRBYFLOAT), or as a raw string
// whatever its length (APPEND to a string, SETRANGE).
constexpr uint8_t kEntryText = 8;
constexpr uint8_t kEntryRaw = 16;

struct Entry {
  Kind kind;
  uint8_t flags;
  uint16_t key_len;
  // Its account (accounts.hpp) in the top 12 bits, and what it is charged in bytes in the
  // low 20 (encode_charge): KeyTable's, kept right as the entry grows and goes.
  uint32_t charge;
  // followed by state_size(kind) bytes of state, then (with kEntryDeadline) an int64 deadline
  // in Unix milliseconds (0: none), then key_len bytes of key

  static size_t state_size(Kind k);
  unsigned char* state_bytes() { return reinterpret_cast<unsigned char*>(this + 1); }
  const unsigned char* state_bytes() const {
    return reinterpret_cast<const unsigned char*>(this + 1);
  }
  template <class T>
  T& state() {
    return *reinterpret_cast<T*>(state_bytes());
  }
  template <class T>
  const T& state() const {
    return *reinterpret_cast<const T*>(state_bytes());
  }
  size_t key_offset() const {
    return state_size(kind) + ((flags & kEntryDeadline) ? sizeof(int64_t) : 0);
  }
  std::string_view key() const {
    return {reinterpret_cast<const char*>(state_bytes()) + key_offset(), key_len};
  }
  uint16_t account() const { return static_cast<uint16_t>(charge >> 20); }
  uint64_t charged() const { return decode_charge(charge & 0xfffff); }
  // The key's deadline in Unix milliseconds; 0 when it has none.
  int64_t deadline_ms() const {
    if (!(flags & kEntryDeadline)) return 0;
    int64_t d;
    std::memcpy(&d, state_bytes() + state_size(kind), sizeof d);
    return d;
  }
};
static_assert(sizeof(Entry) == 8);

class KeyTable {
 public:
  KeyTable();
  ~KeyTable();
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  static uint64_t hash(std::string_view key);

  Entry* find(std::string_view key, uint64_t h) const;
  // Inserts a fresh entry of `kind` (state zeroed, or default-constructed for heap kinds),
  // charged to `account`. The key must not be present and must be at most kMaxKeyLen bytes.
  Entry* insert(std::string_view key, uint64_t h, Kind kind, uint16_t account = Accounts::kNone);
  // Where the table's keys are charged (null: nowhere; tests).
  void set_accounts(Accounts* a) {
    flush_charges();
    accounts_ = a;
  }
  // Charges to accounts are gathered here and handed to Accounts by flush_charges() (the
  // shard's publish(), once per batch): Accounts' tallies are shared by every thread, and an
  // atomic add per key made or gone put one contended cache line in every request on new
  // keys. What is gathered and not yet handed over, for `account` and in all, so a check
  // against a share or maxmemory counts this table's own changes of the batch too.
  void flush_charges();
  struct Pending {
    int64_t keys = 0, bytes = 0;
  };
  Pending pending(uint16_t account) const {
    for (size_t i = 0; i < n_pending_; ++i)
      if (pending_[i].account == account) return {pending_[i].keys, pending_[i].bytes};
    return {};
  }
  int64_t pending_bytes() const {
    int64_t n = 0;
    for (size_t i = 0; i < n_pending_; ++i) n += pending_[i].bytes;
    return n;
  }
  // The entry holds `bytes` now (the entry's own allocation and what its value holds):
  // its charge follows.
  void recharge(Entry* e, uint64_t bytes) {
    const uint32_t code = encode_charge(bytes);
    if (code == (e->charge & 0xfffff)) return;
    const auto delta = static_cast<int64_t>(decode_charge(code) - e->charged());
    e->charge = (e->charge & ~uint32_t{0xfffff}) | code;
    charge(e->account(), 0, delta);
  }
  bool erase(std::string_view key, uint64_t h);
  // Gives `key`'s entry the deadline `ms` (0: none); an entry that had no room for one is
  // moved to a larger allocation, so the returned pointer replaces the old one.
  Entry* set_deadline(std::string_view key, uint64_t h, int64_t ms);

  // Cache hints for a batch of lookups: first every home slot, then every entry those
  // slots point at, so the memory misses of many keys overlap instead of queueing.
  void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots_[home(h)]); }
  void prefetch_entry(uint64_t h) const {
    const uintptr_t s = slots_[home(h)];
    if (s) __builtin_prefetch(entry_of(s));
  }

  // Visits about `budget` slots from a rotating cursor and erases entries for which
  // `idle(entry)` holds (asked once per entry). Returns the number erased. Shrinks the table
  // when mostly empty. A run of occupied slots is visited whole (possibly past the budget),
  // and however many of its entries go, the rest are put back in one pass over it
  // (compact_run): erasing them one at a time, each with its own backward shift to the end
  // of the run, costs the run's length per entry, and a run grown long ahead of the cursor
  // (churn faster than the sweep) then takes seconds to clear.
  template <class IdleFn>
  size_t sweep(size_t budget, IdleFn&& idle);
  // New keys since the last call: how fast the table churns (the sweeper keeps pace).
  size_t take_inserts() {
    const size_t n = inserts_;
    inserts_ = 0;
    return n;
  }
  // The longest run of occupied slots (tests: how far a probe can have to go).
  size_t longest_run() const;

  // Visits the entries whose hash falls in part `part` of `parts` (a power of two, at most
  // 256), by the top bits of the hash kept in each slot: every entry is in exactly one part,
  // whatever the table does between two visits (inserts, erases, rehashes move entries, but
  // never change their hash). A copy taken a part at a time misses nothing that lives
  // throughout.
  template <class Fn>
  void for_each_in_part(uint32_t part, uint32_t parts, Fn&& fn) const {
    const int shift = 16 - __builtin_ctz(parts);  // (the tag is the hash's top 16 bits)
    for (uintptr_t s : slots_)
      if (s && static_cast<uint32_t>((s >> kTagShift) >> shift) == part) fn(entry_of(s));
  }
  // One step of a scan that survives the table growing and shrinking between steps, as
  // Redis's dictScan does: `cursor` names a home slot, and the entries whose home it is are
  // visited (they stand from it to the end of its run); the next cursor comes by adding
  // one to the cursor's bits read backwards, so a cursor of a smaller or larger table goes
  // on from where it was. Home slots are visited until about `count` entries were (or ten
  // times `count` slots were looked at); returns the next cursor, 0 when the scan is done.
  // Every entry present from the scan's start to its end is visited at least once.
  template <class Fn>
  uint64_t scan(uint64_t cursor, size_t count, Fn&& fn) const;
  // Visits every entry (tests, snapshots).
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (uintptr_t s : slots_)
      if (s) fn(entry_of(s));
  }

  // A random entry, or null when empty (RANDOMKEY): up to 64 slots drawn with `draw()`, then
  // the first entry after the last of them. The table is at least 1/8 full once past its
  // smallest size, so the draws nearly always land; the walk only serves near-empty tables.
  template <class Draw>
  Entry* random_entry(Draw&& draw) const {
    if (size_ == 0) return nullptr;
    const size_t n = slots_.size();
    size_t i = 0;
    for (int k = 0; k < 64; ++k) {
      i = draw() & (n - 1);
      if (slots_[i]) return entry_of(slots_[i]);
    }
    for (size_t k = 0; k < n; ++k, i = (i + 1) & (n - 1))
      if (slots_[i]) return entry_of(slots_[i]);
    return nullptr;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  const EntryPool& pool() const { return pool_; }
  size_t bytes() const { return bytes_ + slots_.size() * sizeof(uintptr_t); }
  void clear();

 private:
  static constexpr int kTagShift = 48;
  static constexpr uintptr_t kPtrMask = (uintptr_t{1} << kTagShift) - 1;
  static Entry* entry_of(uintptr_t s) { return reinterpret_cast<Entry*>(s & kPtrMask); }
  static uint64_t reverse_bits(uint64_t v) {
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
    return __builtin_bswap64(v);
  }
  static uintptr_t tag_of(uint64_t h) { return (h >> kTagShift) | 1; }  // never 0
  size_t home(uint64_t h) const { return h & (slots_.size() - 1); }
  void rehash(size_t new_capacity);
  void shrink_to_fit();  // when at most 1/8 full: down to the smallest size that fits
  void erase_slot(size_t i);
  void free_entry(Entry* e);
  // The run of `len` slots from `start` (cyclic) had the entries at the offsets where it
  // now holds 0 erased (the first at `first_hole`): moves the others back so that every
  // entry is again reached from its home without crossing an empty slot.
  void compact_run(size_t start, size_t len, size_t first_hole);
  void charge(uint16_t account, int64_t keys, int64_t bytes) {
    if (!accounts_) return;
    for (size_t i = 0; i < n_pending_; ++i) {
      if (pending_[i].account == account) {
        pending_[i].keys += keys;
        pending_[i].bytes += bytes;
        return;
      }
    }
    if (n_pending_ == kPendingAccounts) flush_charges();
    pending_[n_pending_++] = {account, keys, bytes};
  }

  std::vector<uintptr_t> slots_;
  Accounts* accounts_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;  // bytes held by entries (not counting heap state of log/lease kinds)
  size_t cursor_ = 0;
  size_t inserts_ = 0;
  EntryPool pool_;  // the entries' memory
  // Charges not yet handed to accounts_ (flush_charges), by account: a batch touches few.
  struct PendingCharge {
    uint16_t account;
    int64_t keys, bytes;
  };
  static constexpr size_t kPendingAccounts = 4;
  PendingCharge pending_[kPendingAccounts];
  size_t n_pending_ = 0;
  // Scratch of compact_run, kept between calls.
  struct Moved {
    uint32_t home;  // the first offset in the run it may stand at
    uintptr_t slot;
  };
  std::vector<Moved> moved_;
  std::vector<uint32_t> next_free_;
};

template <class Fn>
uint64_t KeyTable::scan(uint64_t cursor, size_t count, Fn&& fn) const {
  if (size_ == 0) return 0;
  const uint64_t mask = slots_.size() - 1;
  size_t visited = 0;
  for (size_t looked = 0;; ++looked) {
    const size_t b = cursor & mask;
    for (size_t i = b; slots_[i]; i = (i + 1) & mask) {
      Entry* e = entry_of(slots_[i]);
      if (home(hash(e->key())) != b) continue;
      fn(e);
      ++visited;
    }
    cursor = reverse_bits(reverse_bits(cursor | ~mask) + 1);
    if (cursor == 0 || visited >= count || looked + 1 >= count * 10) return cursor;
  }
}

template <class IdleFn>
size_t KeyTable::sweep(size_t budget, IdleFn&& idle) {
  size_t erased = 0;
  for (size_t visited = 0; visited < budget && size_ > 0;) {
    if (cursor_ >= slots_.size()) {
      cursor_ = 0;
      shrink_to_fit();  // only between passes, so a pass is never restarted half-way
    }
    if (!slots_[cursor_]) {
      ++cursor_;
      ++visited;
      continue;
    }
    // The run from here to the next empty slot (it may wrap past the table's end).
    const size_t mask = slots_.size() - 1;
    const size_t start = cursor_;
    size_t len = 0, first_hole = SIZE_MAX;
    for (size_t i = start; slots_[i]; i = (i + 1) & mask, ++len) {
      Entry* e = entry_of(slots_[i]);
      if (!idle(e)) continue;
      free_entry(e);
      --size_;
      ++erased;
      slots_[i] = 0;
      if (first_hole == SIZE_MAX) first_hole = len;
    }
    if (first_hole != SIZE_MAX) compact_run(start, len, first_hole);
    visited += len + 1;
    cursor_ = start + len + 1;  // past the table's end when the run wrapped: the pass ends
  }
  if (size_ == 0) shrink_to_fit();
  return erased;
}

}  // namespace fg
