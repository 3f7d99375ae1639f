// The compact key table: lookups through growth, deletion with backward shift, sweeping
// idle entries, shrinking, and bytes per key.
#include "key_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "entry_pool.hpp"
#include "token_bucket.hpp"

namespace fg {
namespace {

std::string key(int i) { return "user:" + std::to_string(i); }

TEST(KeyTable, InsertFindEraseThroughGrowth) {
  KeyTable t;
  for (int i = 0; i < 20000; ++i) {
    Entry* e = t.insert(key(i), KeyTable::hash(key(i)), Kind::kTokenBucket);
    e->state<TokenBucketState>().full_at_ns = i;
  }
  EXPECT_EQ(t.size(), 20000u);
  for (int i = 0; i < 20000; ++i) {
    Entry* e = t.find(key(i), KeyTable::hash(key(i)));
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->key(), key(i));
    EXPECT_EQ(e->state<TokenBucketState>().full_at_ns, i);
  }
  for (int i = 0; i < 20000; i += 2) ASSERT_TRUE(t.erase(key(i), KeyTable::hash(key(i))));
  EXPECT_FALSE(t.erase(key(0), KeyTable::hash(key(0))));
  for (int i = 0; i < 20000; ++i) {
    EXPECT_EQ(t.find(key(i), KeyTable::hash(key(i))) != nullptr, i % 2 == 1) << i;
  }
}

TEST(KeyTable, RandomChurnMatchesAReferenceSet) {
  KeyTable t;
  std::set<std::string> ref;
  std::mt19937 rng(7);
  for (int step = 0; step < 50000; ++step) {
    std::string k = key(static_cast<int>(rng() % 3000));
    const uint64_t h = KeyTable::hash(k);
    if (rng() % 3 == 0) {
      EXPECT_EQ(t.erase(k, h), ref.erase(k) == 1);
    } else if (!t.find(k, h)) {
      ASSERT_EQ(ref.count(k), 0u);
      t.insert(k, h, Kind::kGcra);
      ref.insert(k);
    }
  }
  EXPECT_EQ(t.size(), ref.size());
  for (const auto& k : ref) EXPECT_NE(t.find(k, KeyTable::hash(k)), nullptr);
}

TEST(KeyTable, SweepErasesIdleAndShrinks) {
  KeyTable t;
  for (int i = 0; i < 100000; ++i) {
    Entry* e = t.insert(key(i), KeyTable::hash(key(i)), Kind::kTokenBucket);
    e->state<TokenBucketState>().full_at_ns = i % 10 == 0 ? 1000 : 0;  // 10% stay busy
  }
  const size_t big = t.capacity();
  const size_t bytes_full = t.bytes();
  size_t erased = 0;
  for (int round = 0; round < 100 && t.size() > 10000; ++round) {
    erased +=
        t.sweep(4096, [](Entry* e) { return e->state<TokenBucketState>().full_at_ns <= 500; });
  }
  EXPECT_EQ(erased, 90000u);
  EXPECT_EQ(t.size(), 10000u);
  for (int i = 0; i < 100000; i += 10) ASSERT_NE(t.find(key(i), KeyTable::hash(key(i))), nullptr);
  for (int round = 0; round < 100; ++round) t.sweep(4096, [](Entry*) { return false; });
  EXPECT_LT(t.capacity(), big);
  EXPECT_LT(t.bytes(), bytes_full / 4);
  // Once everything is idle the table goes back to its smallest size.
  t.sweep(1 << 20, [](Entry*) { return true; });
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.capacity(), 64u);
}

// Sweeping erases many entries of a run at once and puts the rest back in one pass: every
// key left must still be found from its home, whatever was erased around it, including in
// runs that wrap past the table's end and with new keys arriving between sweeps.
TEST(KeyTable, SweepKeepsEveryLiveKeyReachable) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    KeyTable t;
    std::set<std::string> ref;
    int next = 0;
    const int n = 50 + static_cast<int>(rng() % 3000);
    for (int step = 0; step < 30; ++step) {
      for (int i = 0; i < n; ++i) {
        std::string k = key(trial * 1000000 + next++);
        t.insert(k, KeyTable::hash(k), Kind::kGcra);
        ref.insert(k);
      }
      const unsigned odds = 1 + rng() % 4;  // erase 1 in odds
      std::set<std::string> gone;
      const size_t budget = 1 + rng() % (2 * t.capacity());
      const size_t erased = t.sweep(budget, [&](Entry* e) {
        if (rng() % odds != 0) return false;
        gone.insert(std::string(e->key()));
        return true;
      });
      ASSERT_EQ(erased, gone.size());
      for (const auto& k : gone) ASSERT_EQ(ref.erase(k), 1u) << k;
      ASSERT_EQ(t.size(), ref.size());
      for (const auto& k : ref) ASSERT_NE(t.find(k, KeyTable::hash(k)), nullptr) << k;
      for (const auto& k : gone) ASSERT_EQ(t.find(k, KeyTable::hash(k)), nullptr) << k;
    }
  }
}

TEST(KeyTable, SmallFootprintPerKey) {
  KeyTable t;
  for (int i = 0; i < 100000; ++i) {
    std::string k = "key:" + std::to_string(1000000 + i);
    t.insert(k, KeyTable::hash(k), Kind::kTokenBucket);
  }
  // header + state + key bytes, plus the slot array: well under 64 bytes a key.
  EXPECT_LT(t.bytes() / t.size(), 48u);
}

// The entries' pool: every size a chunk of its own (no two live chunks overlap, each keeps
// what was written to it), 16-byte aligned, chunks given back are used again, and once
// every chunk of a burst is freed its slabs are free for any class but one spare per class.
TEST(EntryPool, ChunksAreDistinctReusedAndSlabsGoBackWhenEmpty) {
  EntryPool pool;
  std::mt19937_64 rng(7);
  struct Live {
    unsigned char* p;
    size_t n;
    unsigned char fill;
  };
  std::vector<Live> live;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 5000; ++i) {
      const size_t n = 1 + rng() % 300;  // (past 256: the heap's)
      auto* p = static_cast<unsigned char*>(pool.alloc(n));
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
      const auto fill = static_cast<unsigned char>(rng());
      std::memset(p, fill, n);
      live.push_back({p, n, fill});
    }
    std::shuffle(live.begin(), live.end(), rng);
    const size_t keep = live.size() / 3;
    for (size_t i = keep; i < live.size(); ++i) {
      for (size_t b = 0; b < live[i].n; ++b) ASSERT_EQ(live[i].p[b], live[i].fill);
      pool.free(live[i].p, live[i].n);
    }
    live.resize(keep);
  }
  for (const Live& l : live)
    for (size_t b = 0; b < l.n; ++b) ASSERT_EQ(l.p[b], l.fill);
  // A freed chunk is handed out again before a new one is cut.
  void* a = pool.alloc(40);
  pool.free(a, 40);
  EXPECT_EQ(pool.alloc(40), a);
  pool.free(a, 40);
  const size_t busy = pool.slabs();
  EXPECT_GT(busy, 16u);
  for (const Live& l : live) pool.free(l.p, l.n);
  EXPECT_LE(pool.slabs(), EntryPool::kMaxPooled / EntryPool::kStep);  // the spares
}

// A table under churn holds slabs for what it holds, not for what it once held.
TEST(KeyTable, EntriesMemoryGoesBackAfterABurst) {
  KeyTable t;
  std::vector<std::string> keys;
  for (int i = 0; i < 200000; ++i) keys.push_back("burst:" + std::to_string(i));
  for (const auto& k : keys) t.insert(k, KeyTable::hash(k), Kind::kTokenBucket);
  EXPECT_GT(t.pool().slabs(), 50u);  // (200,000 entries of 32 bytes: 98 slabs)
  for (const auto& k : keys) ASSERT_TRUE(t.erase(k, KeyTable::hash(k)));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_LE(t.pool().slabs(), 1u);  // the spare
}

}  // namespace
}  // namespace fg
