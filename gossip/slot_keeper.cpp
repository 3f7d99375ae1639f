// Hand-off bookkeeping.
#include "slot_keeper.hpp"

namespace fg {

SlotBits SlotKeeper::awaiting() const {
  SlotBits all;
  for (const auto& [src, w] : await_) all |= w.slots;
  return all;
}

void SlotKeeper::give_away(const SlotTable& t, uint32_t s, Actions& a) {
  a.send[t.owner_id(s)].set(s);
  held_.reset(s);
}

SlotKeeper::Actions SlotKeeper::on_table(const SlotTable& before, const SlotTable& after,
                                         const CanSend& can_send, int64_t now_ns) {
  Actions a;
  const SlotBits waiting = awaiting();
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    const uint16_t o = after.owner(s);
    if (o == kNoOwner) continue;
    const bool mine = after.owner_id(s) == self_;
    if (held_.test(s)) {
      if (!mine && after.epoch() >= held_epoch_[s]) give_away(after, s, a);
      continue;
    }
    if (!mine) {
      if (waiting.test(s)) {
        for (auto& [src, w] : await_) w.slots.reset(s);  // its new owner will fetch it
      }
      continue;
    }
    if (waiting.test(s)) continue;
    // Newly ours. Who had it?
    std::string source;
    bool known = false;
    if (before.epoch() > 0) {
      known = true;
      if (before.owner(s) != kNoOwner) source = before.owner_id(s);
    } else if (after.epoch() <= 1 && !first_table_awaits_) {
      known = true;  // the cluster's first table: nobody held anything
    }
    if (known && (source.empty() || source == self_ || !can_send(source))) {
      a.serve_empty.set(s);
      if (source.empty()) a.fresh.set(s);
      held_.set(s);
      continue;
    }
    auto& w = await_[source];
    if (w.slots.none()) w.since_ns = now_ns;
    w.slots.set(s);
  }
  for (auto it = await_.begin(); it != await_.end();) {
    it = it->second.slots.none() ? await_.erase(it) : std::next(it);
  }
  return a;
}

SlotKeeper::Actions SlotKeeper::on_install(const SlotBits& slots, uint64_t epoch,
                                           const SlotTable& current) {
  Actions a;
  held_ |= slots;
  for (auto it = await_.begin(); it != await_.end();) {
    it->second.slots &= ~slots;
    it = it->second.slots.none() ? await_.erase(it) : std::next(it);
  }
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (!slots.test(s)) continue;
    if (epoch > held_epoch_[s]) held_epoch_[s] = epoch;
    // Sent under a table we have adopted (or an older one) but it is not ours in ours:
    // pass it on. Sent under a newer table: keep it until that table arrives.
    if (current.epoch() >= held_epoch_[s] && current.owner(s) != kNoOwner &&
        current.owner_id(s) != self_) {
      give_away(current, s, a);
    }
  }
  return a;
}

SlotKeeper::Actions SlotKeeper::nobody_holds(const SlotBits& slots) {
  Actions a;
  const SlotBits now = slots & awaiting();
  for (auto it = await_.begin(); it != await_.end();) {
    it->second.slots &= ~now;
    it = it->second.slots.none() ? await_.erase(it) : std::next(it);
  }
  held_ |= now;
  a.serve_empty = now;
  a.fresh = now;
  return a;
}

SlotKeeper::Actions SlotKeeper::give_again(const SlotBits& slots, const std::string& to,
                                           const SlotTable& current) {
  Actions a;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (slots.test(s) && held_.test(s) && current.owner(s) != kNoOwner &&
        current.owner_id(s) == to) {
      give_away(current, s, a);
    }
  }
  return a;
}

SlotKeeper::Actions SlotKeeper::on_tick(const CanSend& can_send, int64_t now_ns) {
  Actions a;
  for (auto it = await_.begin(); it != await_.end();) {
    const bool source_gone = !it->first.empty() && !can_send(it->first);
    if (source_gone || now_ns - it->second.since_ns >= await_timeout_ns_) {
      a.serve_empty |= it->second.slots;
      held_ |= it->second.slots;
      it = await_.erase(it);
    } else {
      ++it;
    }
  }
  return a;
}

}  // namespace fg
