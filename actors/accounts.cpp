// The node-wide tallies, per account, and the caps held against them.
#include "accounts.hpp"

namespace fg {

Accounts::Accounts() = default;

Accounts::~Accounts() {
  for (auto& c : chunks_) delete c.load(std::memory_order_relaxed);
}

Accounts::Tally& Accounts::tally(uint16_t account) {
  const size_t at = (account & (kMax - 1)) / kChunk;
  Chunk* c = chunks_[at].load(std::memory_order_acquire);
  if (!c) {
    std::lock_guard<std::mutex> lock(grow_mu_);
    c = chunks_[at].load(std::memory_order_relaxed);
    if (!c) {
      c = new Chunk;
      chunks_[at].store(c, std::memory_order_release);
    }
  }
  return c->tallies[account % kChunk];
}

void Accounts::set_cap(uint16_t account, Meter m, int64_t cap) {
  if (account == kNone) return;
  tally(account).cap[m].store(cap, std::memory_order_relaxed);
}

int64_t Accounts::cap(uint16_t account, Meter m) const {
  const Tally* t = find(account);
  return t ? t->cap[m].load(std::memory_order_relaxed) : INT64_MAX;
}

Accounts::Room Accounts::grow(uint16_t account, int64_t extra_bytes, int64_t extra_total) const {
  const int64_t most = maxmemory();
  if (most > 0 && total_bytes() + extra_total >= most) return Room::kNodeMemory;
  if (!room(account, kBytes, 1 + extra_bytes)) return Room::kUserMemory;
  return Room::kOk;
}

Accounts::Room Accounts::new_key(uint16_t account, int64_t extra_keys, int64_t extra_bytes,
                                 int64_t extra_total) const {
  if (!room(account, kKeys, 1 + extra_keys)) return Room::kUserKeys;
  return grow(account, extra_bytes, extra_total);
}

}  // namespace fg
