// What one node does with slot state as slot tables change: which slots it serves, which
// it waits for, and which it must send to their new owner. Pure bookkeeping (no I/O, time
// passed in), so every hand-off rule is tested without a network.
//
// The rules: a node serves a slot only while it holds the slot's state. When a table
// gives a held slot to someone else, the state is sent there (the sender stops serving it
// first). When a table gives this node a slot whose previous owner can still send its
// state, the node waits for it (callers hold requests for the slot meanwhile), up to a
// timeout, after which it serves the slot from empty state. Slots nobody held start empty
// at once. State that arrives stamped with a newer table than this node has adopted is
// held until that table arrives, never bounced back.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "key_slot.hpp"
#include "slot_table.hpp"

namespace fg {

class SlotKeeper {
 public:
  struct Actions {
    std::map<std::string, SlotBits> send;  // extract these slots, install them at that id
    SlotBits serve_empty;                  // start serving these with no state
    SlotBits fresh;  // of serve_empty: slots nobody held before (a first table), not lost ones
    bool any() const { return !send.empty() || serve_empty.any(); }
  };
  // Whether member `id` is alive enough to send the state it holds (alive, suspect, or
  // leaving gracefully).
  using CanSend = std::function<bool(const std::string& id)>;

  SlotKeeper(std::string self, int64_t await_timeout_ns)
      : self_(std::move(self)), await_timeout_ns_(await_timeout_ns), held_epoch_(kSlotCount, 0) {}

  // A process that may be a restarted member (a cluster node) waits for the slots its
  // first table gives it even when that is the cluster's first table: their replicas may
  // hold its previous process's state (Cluster asks them). Off: a first table of epoch 1
  // starts every slot empty at once.
  void set_first_table_awaits(bool on) { first_table_awaits_ = on; }
  // Awaited slots nobody holds a copy of after all (every replica said so, in the cluster's
  // first table): served from empty at once, as fresh slots.
  Actions nobody_holds(const SlotBits& slots);

  // `after` was adopted; `before` is the table it replaced (epoch 0 if none).
  Actions on_table(const SlotTable& before, const SlotTable& after, const CanSend& can_send,
                   int64_t now_ns);
  // The state of `slots`, stamped with the sender's table epoch, was installed here.
  Actions on_install(const SlotBits& slots, uint64_t epoch, const SlotTable& current);
  // Gives up on awaited slots whose source died or that waited past the timeout.
  Actions on_tick(const CanSend& can_send, int64_t now_ns);
  // Slots taken back from `to` (a hand-off that found it unreachable) and held here, to be
  // handed to it again: it is reachable after all and `current` still gives them to it.
  Actions give_again(const SlotBits& slots, const std::string& to, const SlotTable& current);

  // This node's state was found stale: it holds and awaits nothing any more.
  void fence() {
    held_.reset();
    await_.clear();
    std::fill(held_epoch_.begin(), held_epoch_.end(), 0);
  }

  const SlotBits& held() const { return held_; }
  SlotBits awaiting() const;
  size_t awaiting_count() const { return awaiting().count(); }

 private:
  struct Await {
    SlotBits slots;
    int64_t since_ns;
  };
  void give_away(const SlotTable& t, uint32_t s, Actions& a);

  std::string self_;
  int64_t await_timeout_ns_;
  bool first_table_awaits_ = false;
  SlotBits held_;
  std::vector<uint64_t> held_epoch_;    // epoch of the install that brought the slot
  std::map<std::string, Await> await_;  // by source id ("" = unknown previous owner)
};

}  // namespace fg
