#include "entry_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

namespace fg {

// A slab's first 64 bytes; its chunks follow. Found from any of its chunks by the slab's
// alignment.
struct EntryPool::Slab {
  Slab* prev = nullptr;
  Slab* next = nullptr;
  Chunk* free = nullptr;  // chunks given back
  uint32_t live = 0;      // chunks in use
  uint32_t fresh = 0;     // where the chunks never used yet start
  uint32_t size = 0;      // of its chunks
  uint32_t cls = 0;
  bool listed = false;  // in partial_[cls]: it has a chunk to give
};

namespace {
constexpr uint32_t kHeader = 64;
}  // namespace

EntryPool::~EntryPool() {
  // (the table frees every entry first: nothing in the regions is in use any more)
  for (void* r : regions_) munmap(r, kRegionBytes + kSlabBytes);
}

void* EntryPool::alloc(size_t n) {
  if (n == 0) n = 1;
  if (n > kMaxPooled) return std::malloc(n);
  const size_t cls = class_of(n);
  Slab* s = partial_[cls];
  if (!s && !(s = grow(cls))) return nullptr;
  void* p;
  if (s->free) {
    p = s->free;
    s->free = s->free->next;
  } else {
    p = reinterpret_cast<char*>(s) + s->fresh;
    s->fresh += s->size;
  }
  ++s->live;
  if (!s->free && s->fresh + s->size > kSlabBytes) unlink(s);  // full
  return p;
}

void EntryPool::free(void* p, size_t n) {
  if (!p) return;
  if (n == 0) n = 1;
  if (n > kMaxPooled) return std::free(p);
  Slab* s = reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{kSlabBytes - 1});
  auto* c = static_cast<Chunk*>(p);
  c->next = s->free;
  s->free = c;
  if (--s->live == 0) return retire(s);
  if (!s->listed) {  // it was full: it has a chunk to give again
    const size_t cls = s->cls;
    s->prev = nullptr;
    s->next = partial_[cls];
    if (s->next) s->next->prev = s;
    partial_[cls] = s;
    s->listed = true;
  }
}

void EntryPool::retire(Slab* s) {
  unlink(s);
  s->free = nullptr;
  s->fresh = kHeader;
  if (!spare_[s->cls]) {
    spare_[s->cls] = s;
    return;
  }
  --slabs_;
  if (free_count_ >= kKeptFree) {
    // (the header's page stays: it links the slab into the free list)
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    madvise(reinterpret_cast<char*>(s) + page, kSlabBytes - page, MADV_DONTNEED);
  }
  s->next = free_;
  free_ = s;
  ++free_count_;
}

EntryPool::Slab* EntryPool::grow(size_t cls) {
  Slab* s = spare_[cls];
  if (s) {
    spare_[cls] = nullptr;
  } else {
    if (free_) {
      s = free_;
      free_ = s->next;
      --free_count_;
    } else {
      if (uncut_ == uncut_end_) {
        // A region, aligned to a slab (mapped a slab longer, its start rounded up); its
        // slabs are cut as they are needed (an untouched page costs nothing).
        void* m = mmap(nullptr, kRegionBytes + kSlabBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return nullptr;
        regions_.push_back(m);
        uncut_ = (reinterpret_cast<uintptr_t>(m) + kSlabBytes - 1) & ~uintptr_t{kSlabBytes - 1};
        uncut_end_ = uncut_ + kRegionBytes;
      }
      s = reinterpret_cast<Slab*>(uncut_);
      uncut_ += kSlabBytes;
    }
    s = new (s) Slab;
    s->size = static_cast<uint32_t>((cls + 1) * kStep);
    s->cls = static_cast<uint32_t>(cls);
    s->fresh = kHeader;
    ++slabs_;
  }
  s->prev = nullptr;
  s->next = partial_[cls];
  if (s->next) s->next->prev = s;
  partial_[cls] = s;
  s->listed = true;
  return s;
}

void EntryPool::unlink(Slab* s) {
  if (!s->listed) return;
  if (s->prev) {
    s->prev->next = s->next;
  } else {
    partial_[s->cls] = s->next;
  }
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = nullptr;
  s->listed = false;
}

}  // namespace fg
