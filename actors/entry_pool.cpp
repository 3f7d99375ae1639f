#include "entry_pool.hpp"

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
static_assert(sizeof(void*) == 8);
}  // namespace

EntryPool::~EntryPool() {
  // (the table frees every entry first: no slab is in use any more)
  for (size_t c = 0; c < kClasses; ++c) {
    while (Slab* s = partial_[c]) {
      unlink(s);
      std::free(s);
    }
    std::free(spare_[c]);
  }
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
  --s->live;
  const size_t cls = s->cls;
  if (s->live == 0) {
    unlink(s);
    if (spare_[cls]) {
      std::free(s);
      --slabs_;
    } else {
      s->free = nullptr;
      s->fresh = kHeader;
      spare_[cls] = s;
    }
    return;
  }
  if (!s->listed) {  // it was full: it has a chunk to give again
    s->prev = nullptr;
    s->next = partial_[cls];
    if (s->next) s->next->prev = s;
    partial_[cls] = s;
    s->listed = true;
  }
}

EntryPool::Slab* EntryPool::grow(size_t cls) {
  Slab* s = spare_[cls];
  if (s) {
    spare_[cls] = nullptr;
  } else {
    void* m = std::aligned_alloc(kSlabBytes, kSlabBytes);
    if (!m) return nullptr;
    s = new (m) Slab;
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
