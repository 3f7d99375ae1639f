// Open addressing with linear probing and backward-shift deletion (no tombstones), so a
// table that has seen churn costs no more to probe than a fresh one.
#include "key_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <new>

#include "value_kinds.hpp"

namespace fg {

size_t Entry::state_size(Kind k) { return kind_row(k).state_size; }

namespace {
size_t entry_bytes(const Entry* e) { return sizeof(Entry) + e->key_offset() + e->key_len; }
}  // namespace

KeyTable::KeyTable() : slots_(64, 0) {}

KeyTable::~KeyTable() {
  clear();
  flush_charges();
}

void KeyTable::flush_charges() {
  if (accounts_)
    for (size_t i = 0; i < n_pending_; ++i)
      if (pending_[i].keys || pending_[i].bytes)
        accounts_->charge_key(pending_[i].account, pending_[i].keys, pending_[i].bytes);
  n_pending_ = 0;
}

void KeyTable::clear() {
  for (uintptr_t& s : slots_) {
    if (s) free_entry(entry_of(s));
    s = 0;
  }
  size_ = 0;
  bytes_ = 0;
}

uint64_t KeyTable::hash(std::string_view key) {
  // Mix the library hash so both low bits (home slot) and high bits (tag) are usable.
  uint64_t h = std::hash<std::string_view>{}(key);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

Entry* KeyTable::find(std::string_view key, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uintptr_t tag = tag_of(h);
  for (size_t i = home(h);; i = (i + 1) & mask) {
    const uintptr_t s = slots_[i];
    if (!s) return nullptr;
    if ((s >> kTagShift) == tag) {
      Entry* e = entry_of(s);
      if (e->key_len == key.size() && e->key() == key) return e;
    }
  }
}

Entry* KeyTable::insert(std::string_view key, uint64_t h, Kind kind, uint16_t account) {
  if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
  const size_t state = Entry::state_size(kind);
  const size_t n = sizeof(Entry) + state + key.size();
  auto* e = static_cast<Entry*>(pool_.alloc(n));
  if (!e) throw std::bad_alloc();
  e->kind = kind;
  e->flags = 0;
  e->key_len = static_cast<uint16_t>(key.size());
  // (charged its allocation and a heap block's overhead until it is weighed whole)
  e->charge = static_cast<uint32_t>(account & 0xfff) << 20 | encode_charge(n + 16);
  std::memset(e->state_bytes(), 0, state);
  if (!key.empty()) std::memcpy(e->state_bytes() + state, key.data(), key.size());
  if (const auto make = kind_row(kind).make) make(*e);
  const size_t mask = slots_.size() - 1;
  size_t i = home(h);
  while (slots_[i]) i = (i + 1) & mask;
  slots_[i] = (tag_of(h) << kTagShift) | reinterpret_cast<uintptr_t>(e);
  ++size_;
  ++inserts_;
  bytes_ += n;
  charge(account, 1, static_cast<int64_t>(e->charged()));
  return e;
}

bool KeyTable::erase(std::string_view key, uint64_t h) {
  const size_t mask = slots_.size() - 1;
  const uintptr_t tag = tag_of(h);
  for (size_t i = home(h);; i = (i + 1) & mask) {
    const uintptr_t s = slots_[i];
    if (!s) return false;
    if ((s >> kTagShift) == tag) {
      Entry* e = entry_of(s);
      if (e->key_len == key.size() && e->key() == key) {
        erase_slot(i);
        return true;
      }
    }
  }
}

void KeyTable::free_entry(Entry* e) {
  const size_t n = entry_bytes(e);  // (what it was allocated with)
  if (const auto free = kind_row(e->kind).free) free(*e);
  bytes_ -= n;
  charge(e->account(), -1, -static_cast<int64_t>(e->charged()));
  pool_.free(e, n);
}

Entry* KeyTable::set_deadline(std::string_view key, uint64_t h, int64_t ms) {
  const size_t mask = slots_.size() - 1;
  const uintptr_t tag = tag_of(h);
  for (size_t i = home(h);; i = (i + 1) & mask) {
    const uintptr_t s = slots_[i];
    if (!s) return nullptr;
    if ((s >> kTagShift) != tag) continue;
    Entry* e = entry_of(s);
    if (e->key_len != key.size() || e->key() != key) continue;
    const size_t at = Entry::state_size(e->kind);
    if (!(e->flags & kEntryDeadline)) {
      if (ms == 0) return e;
      // Room for the deadline between the state and the key: the entry moves (heap state
      // is owned through pointers in it, which move with it).
      const size_t before = entry_bytes(e);
      auto* n = static_cast<Entry*>(pool_.alloc(before + sizeof(int64_t)));
      if (!n) throw std::bad_alloc();
      std::memcpy(n, e, sizeof(Entry) + at);
      if (e->key_len)
        std::memcpy(n->state_bytes() + at + sizeof(int64_t), e->state_bytes() + at, e->key_len);
      n->flags = static_cast<uint8_t>(n->flags | kEntryDeadline);
      pool_.free(e, before);
      e = n;
      slots_[i] = (tag << kTagShift) | reinterpret_cast<uintptr_t>(e);
      bytes_ += sizeof(int64_t);
    }
    std::memcpy(e->state_bytes() + at, &ms, sizeof ms);
    return e;
  }
}

void KeyTable::erase_slot(size_t i) {
  free_entry(entry_of(slots_[i]));
  --size_;
  const size_t mask = slots_.size() - 1;
  // Backward shift: pull later members of the probe run into the hole when allowed.
  size_t hole = i;
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    const uintptr_t s = slots_[j];
    if (!s) break;
    const size_t want = home(hash(entry_of(s)->key()));
    // Move s into the hole if its home is not in the cyclic range (hole, j].
    const bool in_range = hole <= j ? (want > hole && want <= j) : (want > hole || want <= j);
    if (!in_range) {
      slots_[hole] = s;
      hole = j;
    }
  }
  slots_[hole] = 0;
}

void KeyTable::compact_run(size_t start, size_t len, size_t first_hole) {
  // Every entry past the first hole is lifted out, then put back in the order they stood,
  // each in the first free slot from its home on (where a probe from its home finds it).
  // Which slots are free is a union-find over the run's offsets, so a run costs about its
  // length whatever the number of holes (erase_slot's shift per hole costs the run each).
  const size_t mask = slots_.size() - 1;
  moved_.clear();
  for (size_t q = first_hole + 1; q < len; ++q) {
    const size_t i = (start + q) & mask;
    const uintptr_t s = slots_[i];
    if (!s) continue;
    size_t home = (this->home(hash(entry_of(s)->key())) - start) & mask;
    if (home > q) home = 0;  // (home before the run's part visited: every slot up to it is full)
    moved_.push_back({static_cast<uint32_t>(std::max(home, first_hole)), s});
    slots_[i] = 0;
  }
  next_free_.resize(len + 1);
  for (size_t q = first_hole; q <= len; ++q) next_free_[q] = static_cast<uint32_t>(q);
  auto find = [&](uint32_t x) {
    while (next_free_[x] != x) {
      next_free_[x] = next_free_[next_free_[x]];  // (path halving)
      x = next_free_[x];
    }
    return x;
  };
  for (const Moved& m : moved_) {
    const uint32_t t = find(m.home);
    // An entry never moves forward: its own old slot is free unless an earlier one took it,
    // and then so was one before it.
    size_t i = (start + t) & mask;
    if (t == len) {  // (cannot happen; a probe is right whatever)
      while (slots_[i]) i = (i + 1) & mask;
    } else {
      next_free_[t] = t + 1;
    }
    slots_[i] = m.slot;
  }
}

size_t KeyTable::longest_run() const {
  size_t longest = 0, run = 0;
  // Twice round, so a run that wraps past the end is measured whole.
  for (size_t k = 0; k < 2 * slots_.size(); ++k) {
    run = slots_[k & (slots_.size() - 1)] ? run + 1 : 0;
    longest = std::max(longest, std::min(run, size_));
  }
  return longest;
}

void KeyTable::shrink_to_fit() {
  constexpr size_t kMin = 64;
  if (slots_.size() <= kMin || size_ * 8 >= slots_.size()) return;
  size_t cap = kMin;
  while (size_ * 2 > cap) cap *= 2;  // half full at most, so growth is not imminent
  rehash(cap);
}

void KeyTable::rehash(size_t new_capacity) {
  std::vector<uintptr_t> old(new_capacity, 0);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (uintptr_t s : old) {
    if (!s) continue;
    size_t i = home(hash(entry_of(s)->key()));
    while (slots_[i]) i = (i + 1) & mask;
    slots_[i] = s;
  }
  cursor_ = 0;
}

}  // namespace fg
