// A Lua state's heap allocator (one per state, used only by whoever holds its shard).
#pragma once
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fg {

// A Lua state's heap. Lua says a block's size whenever it frees or resizes one, so small
// blocks need no header: they come from size classes carved out of big chunks and go back
// to their class's free list (most of what a script allocates is small and short-lived:
// strings, tables, reply values). Big blocks are malloc's. The chunks go with the state.
class LuaHeap {
 public:
  LuaHeap() = default;
  LuaHeap(const LuaHeap&) = delete;
  LuaHeap& operator=(const LuaHeap&) = delete;
  ~LuaHeap() {
    for (void* c : chunks_) std::free(c);
  }

  void* alloc(size_t n) {
    if (n > kMaxSmall) return std::malloc(n);
    const size_t c = (n - 1) / kGrain;
    if (Free* f = free_[c]) {
      free_[c] = f->next;
      return f;
    }
    const size_t size = (c + 1) * kGrain;
    if (left_ < size && !refill()) return nullptr;
    void* p = next_;
    next_ += size;
    left_ -= size;
    return p;
  }
  void release(void* p, size_t n) {
    if (n > kMaxSmall) return std::free(p);
    auto* f = static_cast<Free*>(p);
    const size_t c = (n - 1) / kGrain;
    f->next = free_[c];
    free_[c] = f;
  }
  void* resize(void* p, size_t from, size_t to) {
    if (from > kMaxSmall && to > kMaxSmall) return std::realloc(p, to);
    if (from <= kMaxSmall && to <= kMaxSmall && (from - 1) / kGrain == (to - 1) / kGrain) return p;
    void* q = alloc(to);
    if (!q) return to < from ? p : nullptr;  // (Lua assumes a shrink never fails)
    std::memcpy(q, p, std::min(from, to));
    release(p, from);
    return q;
  }

 private:
  static constexpr size_t kGrain = 16;
  static constexpr size_t kMaxSmall = 512;
  static constexpr size_t kChunk = 64 * 1024;
  struct Free {
    Free* next;
  };
  bool refill() {
    // (what is left of the old chunk is too small for this class: it goes to smaller ones)
    while (left_ >= kGrain) {
      const size_t size = std::min(left_, kMaxSmall) / kGrain * kGrain;
      release(next_, size);
      next_ += size;
      left_ -= size;
    }
    void* c = std::malloc(kChunk);
    if (!c) return false;
    chunks_.push_back(c);
    next_ = static_cast<char*>(c);
    left_ = kChunk;
    return true;
  }
  Free* free_[kMaxSmall / kGrain] = {};
  char* next_ = nullptr;
  size_t left_ = 0;
  std::vector<void*> chunks_;
};

}  // namespace fg
