// A shard's state moving between nodes: extracting slots for a hand-off or a replica's
// copy, installing and merging what arrives, the changed keys the replication stream
// carries (collect_dirty) and a replica applying them, and a key's state saved and put
// back for a script that is undone.
#include <cstring>

#include "key_slot.hpp"
#include "merge.hpp"
#include "shard.hpp"

namespace fg {

bool Shard::save_key(std::string_view key, int64_t now_ns, EntrySnapshot& out) {
  Entry* e = lookup(key, KeyTable::hash(key), now_ns);
  if (!e) return false;
  out = snapshot_of(*e);
  return true;
}

void Shard::restore_key(std::string_view key, const EntrySnapshot* before) {
  const uint64_t h = KeyTable::hash(key);
  if (!before) {
    if (table_.find(key, h)) {
      forget(key, h);
      mark_gone(key);
    }
    return;
  }
  install_one(*before);
  if (Entry* e = table_.find(key, h)) mark(e, key);
}

std::vector<EntrySnapshot> Shard::extract(const std::function<bool(uint32_t)>& want, int64_t now_ns,
                                          bool remove, bool keep) {
  std::vector<Entry*> hits;
  table_.for_each([&](Entry* e) {
    if (want(key_slot(e->key()))) hits.push_back(e);
  });
  std::vector<EntrySnapshot> out;
  std::vector<std::string> gone;
  for (Entry* e : hits) {
    if (!expire(e, now_ns)) out.push_back(snapshot_of(*e));
    if (remove && !keep) gone.emplace_back(e->key());
  }
  for (const auto& k : gone) forget(k, KeyTable::hash(k));
  if (remove && !watch_.empty()) touch_all();  // (kept or not, they are no longer served)
  publish();
  return out;
}

void Shard::copy_part(uint32_t part, uint32_t parts, int64_t now_ns,
                      std::vector<EntrySnapshot>& out) {
  std::vector<Entry*> hits;
  table_.for_each_in_part(part, parts, [&](Entry* e) { hits.push_back(e); });
  for (Entry* e : hits)
    if (!expire(e, now_ns)) out.push_back(snapshot_of(*e));  // (idle: left for the sweep)
}

void Shard::install_one(const EntrySnapshot& s) {
  if (s.kind == Kind::kNone || s.key.size() > kMaxKeyLen ||
      s.fields.size() != snapshot_field_count(s.kind)) {
    return;  // malformed: never half-install
  }
  const uint64_t h = KeyTable::hash(s.key);
  forget(s.key, h);
  Entry* e = table_.insert(s.key, h, s.kind, s.account);
  restore_into(*e, s);
  if (s.expires_ms > 0) e = table_.set_deadline(s.key, h, s.expires_ms);
  table_.recharge(e, entry_weight(*e));
  for (const Lease& l : s.leases) holders_.add(l.holder, s.key);
  if (s.kind == Kind::kConcurrency) leases_ += static_cast<int64_t>(s.leases.size());
}

void Shard::install_packed(const PackedRecord& r, uint64_t h) {
  Entry* e = table_.find(r.key, h);
  if (e && e->kind != r.kind) {
    forget(r.key, h);
    e = nullptr;
  }
  if (!e) e = table_.insert(r.key, h, r.kind);
  restore_packed(*e, r);
  if (e->deadline_ms() != r.deadline_ms) e = table_.set_deadline(r.key, h, r.deadline_ms);
  table_.recharge(e, entry_weight(*e));
}

void Shard::install(const std::vector<EntrySnapshot>& entries) {
  if (!watch_.empty()) touch_all();
  for (const EntrySnapshot& s : entries) install_one(s);
  publish();
}

size_t Shard::merge(std::vector<EntrySnapshot>& entries, int64_t now_ns,
                    std::vector<EntrySnapshot>& refused, const SlotBits& fresh, bool fresh_only,
                    const SlotBits* into_copies) {
  size_t changed = 0;
  if (!watch_.empty()) touch_all();
  for (EntrySnapshot& s : entries) {
    if (s.kind == Kind::kNone || s.key.size() > kMaxKeyLen ||
        s.fields.size() != snapshot_field_count(s.kind)) {
      continue;  // malformed: never half-install
    }
    const uint32_t slot = key_slot(s.key);
    if (!owns(slot) && into_copies && into_copies->test(slot)) {
      // (copies of one slot gathered before anyone serves it: each holds grants — leases
      // too — that were acknowledged; the merge keeps them all)
      const uint64_t h = KeyTable::hash(s.key);
      EntrySnapshot cur;
      if (Entry* e = lookup(s.key, h, now_ns)) cur = snapshot_of(*e);
      if (merge_snapshot(cur, s)) {
        install_one(cur);
        ++changed;
      }
      continue;
    }
    if (!owns(slot)) {
      refused.push_back(std::move(s));
      continue;
    }
    // Leases: every grant and release is acknowledged only once a replica holds it, so a
    // copy served here since before is complete; the returning one could only add grants
    // refused to their callers or leases released since — which a holder's heartbeat would
    // then renew forever. Only a slot started here from nothing takes them.
    if ((fresh_only || s.kind == Kind::kConcurrency) && !fresh.test(slot)) continue;
    const uint64_t h = KeyTable::hash(s.key);
    EntrySnapshot cur;
    if (Entry* e = lookup(s.key, h, now_ns)) cur = snapshot_of(*e);
    if (!merge_snapshot(cur, s)) continue;
    install_one(cur);
    if (Entry* e = lookup(cur.key, h, now_ns)) {
      mark(e, cur.key);
      ++changed;
    }  // (else the merged state was already idle, and is gone)
  }
  publish();
  return changed;
}

void Shard::note_dirty(std::string_view key) {
  if (dirty_count_ >= max_dirty_) {
    dirty_overflow_ = true;  // the replicas will be sent everything instead
    return;
  }
  const auto n = static_cast<uint16_t>(key.size());  // (keys are at most kMaxKeyLen)
  dirty_.append(reinterpret_cast<const char*>(&n), sizeof n);
  dirty_.append(key);
  ++dirty_count_;
}

void Shard::collect_dirty(ShardChanges& out, int64_t now_ns) {
  // In windows of keys whose table slots, then entries, are prefetched first: the keys are
  // scattered over the table, and their memory misses overlap instead of queueing.
  constexpr size_t kWindow = 16;
  std::string_view keys[kWindow];
  uint64_t hashes[kWindow];
  for (size_t pos = 0; pos < dirty_.size();) {
    size_t n = 0;
    for (; n < kWindow && pos < dirty_.size(); ++n) {
      uint16_t len;
      std::memcpy(&len, dirty_.data() + pos, sizeof len);
      keys[n] = std::string_view(dirty_.data() + pos + sizeof len, len);
      hashes[n] = KeyTable::hash(keys[n]);
      table_.prefetch_slot(hashes[n]);
      pos += sizeof len + len;
    }
    for (size_t i = 0; i < n; ++i) table_.prefetch_entry(hashes[i]);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view k = keys[i];
      Entry* e = table_.find(k, hashes[i]);
      const size_t at = out.packed.size();
      if (!e || expire(e, now_ns)) {
        // Idle (a window that just ended, say) is gone for the replicas; the entry may stay
        // here until the sweep and be taken again in place — its next change must be listed
        // again, so it is no longer "changed since the stream last took it".
        if (e) e->flags &= static_cast<uint8_t>(~kEntryDirty);
        pack_gone(k, out.packed);  // (a replica sweeps idle state by itself; this is cheap)
      } else if (!(e->flags & kEntryDirty)) {
        continue;  // listed twice, already taken
      } else {
        e->flags &= static_cast<uint8_t>(~kEntryDirty);
        if (!packable(e->kind)) {
          out.snapshots.push_back(snapshot_of(*e));
          continue;
        }
        pack_entry(*e, out.packed);
      }
      out.marks.push_back({at, out.packed.size() - at, key_slot(k)});
    }
  }
  dirty_.clear();
  dirty_count_ = 0;
  if (dirty_.capacity() > (size_t{4} << 20)) dirty_.shrink_to_fit();
  if (dirty_overflow_) {
    // Keys marked past the list were never listed: the replicas get whole copies instead,
    // and every mark goes, so that each key's next change is listed again.
    out.complete = false;
    table_.for_each([](Entry* e) { e->flags &= static_cast<uint8_t>(~kEntryDirty); });
  }
  dirty_overflow_ = false;
}

void Shard::clear_unowned(const SlotBits& slots) {
  if (slots.none()) return;
  std::vector<std::string> gone;
  table_.for_each([&](Entry* e) {
    const uint32_t s = key_slot(e->key());
    if (slots.test(s) && !owns(s)) gone.emplace_back(e->key());
  });
  for (const auto& k : gone) forget(k, KeyTable::hash(k));
  publish();
}

void Shard::apply_replica(const std::vector<EntrySnapshot>& entries, std::string_view packed) {
  for (const EntrySnapshot& e : entries) {
    if (!owns(key_slot(e.key))) install_one(e);  // served here: this node decides
  }
  // Records in windows, their keys' table slots and entries prefetched first (as above).
  constexpr size_t kWindow = 16;
  PackedRecord recs[kWindow];
  uint64_t hashes[kWindow];
  while (!packed.empty()) {
    size_t n = 0;
    for (; n < kWindow && !packed.empty() && read_packed(packed, recs[n]); ++n) {
      packed.remove_prefix(recs[n].size);
      hashes[n] = KeyTable::hash(recs[n].key);
      table_.prefetch_slot(hashes[n]);
    }
    if (n == 0) break;  // (checked by the stream before it got here)
    for (size_t i = 0; i < n; ++i) table_.prefetch_entry(hashes[i]);
    for (size_t i = 0; i < n; ++i) {
      const PackedRecord& r = recs[i];
      if (owns(key_slot(r.key))) continue;
      if (r.kind == Kind::kNone) {
        forget(r.key, hashes[i]);
      } else {
        install_packed(r, hashes[i]);
      }
    }
  }
  publish();
}

}  // namespace fg
