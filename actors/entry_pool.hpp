// Memory for one KeyTable's entries: 64 KiB slabs cut into chunks of one size class each
// (16 to 256 bytes, in steps of 16), larger entries from the heap. A table under key churn —
// random keys made and swept at hundreds of thousands a second — spent an eighth of its
// node's CPU in malloc and free, whose bins the protocol's and the peer links' larger
// buffers keep consolidating; here a chunk comes off its slab's free list. Slabs are cut
// from 2 MiB regions mapped for the pool; a slab whose chunks are all free is kept for any
// class (one per class stays its class's spare, so a class on the edge does not churn), and
// past 1 MiB of free slabs the pages of the others go back to the system (the first page,
// which holds the slab's header, stays), so what a burst of keys took is given back once
// they go, whichever sizes come next. One thread at a time (the shard's), like the table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fg {

class EntryPool {
 public:
  static constexpr size_t kSlabBytes = 64 * 1024;
  static constexpr size_t kStep = 16;
  static constexpr size_t kMaxPooled = 256;  // larger: the heap's

  EntryPool() = default;
  ~EntryPool();
  EntryPool(const EntryPool&) = delete;
  EntryPool& operator=(const EntryPool&) = delete;

  // `n` bytes, 16-byte aligned; null when out of memory. free() must be given the same n.
  void* alloc(size_t n);
  void free(void* p, size_t n);

  // Slabs held (in use or the spare), for tests and the memory figures.
  size_t slabs() const { return slabs_; }

 private:
  struct Slab;
  struct Chunk {
    Chunk* next;
  };
  static constexpr size_t kClasses = kMaxPooled / kStep;
  static size_t class_of(size_t n) { return (n + kStep - 1) / kStep - 1; }
  static constexpr size_t kRegionBytes = 2 * 1024 * 1024;
  static constexpr size_t kKeptFree = 16;  // free slabs kept whole; past it, pages go back
  Slab* grow(size_t cls);
  void unlink(Slab* s);
  void retire(Slab* s);  // an empty slab: its class's spare, or a free slab

  Slab* partial_[kClasses] = {};  // slabs of each class with a free chunk
  Slab* spare_[kClasses] = {};    // an empty slab kept back
  Slab* free_ = nullptr;          // free slabs, of no class (linked through `next`)
  size_t free_count_ = 0;
  uintptr_t uncut_ = 0, uncut_end_ = 0;  // the newest region's slabs not used yet
  size_t slabs_ = 0;                     // slabs of a class (in use or spare)
  std::vector<void*> regions_;           // what was mapped, to unmap
};

}  // namespace fg
