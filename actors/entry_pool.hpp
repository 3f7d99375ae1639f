// Memory for one KeyTable's entries: 64 KiB slabs cut into chunks of one size class each
// (16 to 256 bytes, in steps of 16), larger entries from the heap. A table under key churn —
// random keys made and swept at hundreds of thousands a second — spent an eighth of its
// node's CPU in malloc and free, whose bins the protocol's and the peer links' larger
// buffers keep consolidating; here a chunk comes off its slab's free list. A slab whose
// chunks are all free goes back to the heap (one empty slab per class is kept, so a class
// on the edge does not churn slabs), so what a burst of keys took is given back once they
// go. One thread at a time (the shard's), like the table.
#pragma once
#include <cstddef>
#include <cstdint>

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
  Slab* grow(size_t cls);
  void unlink(Slab* s);

  Slab* partial_[kClasses] = {};  // slabs of each class with a free chunk
  Slab* spare_[kClasses] = {};    // an empty slab kept back
  size_t slabs_ = 0;
};

}  // namespace fg
