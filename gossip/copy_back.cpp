// A restarted owner takes its slots' state back from their replicas. A node killed and
// started again before the others declare it dead (a supervisor restarting it at once) is
// still the owner of its slots in the cluster's table: nobody fails over, and its new
// process holds only what it last saved. Its replicas hold what it admitted up to its last
// replication round, so a process asks them, slot by slot, before it serves its first
// table's slots (state.proto CopyBack). A slot no replica holds waits for a hand-off from
// its previous owner, as any slot does, or for the wait to end (SlotKeeper).
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {
namespace {
constexpr auto kAskDeadline = std::chrono::milliseconds(1000);
}  // namespace

void Cluster::ask_copies() {
  while (asks_out_ == 0) {
    const SlotTable& t = agreement_->table();
    if (t.epoch() != ask_epoch_) {
      asking_.reset();  // a newer table says where each slot's state comes from
      return;
    }
    asking_ &= keeper_.awaiting();
    if (asking_.none()) return;
    if (ask_rank_ >= t.replica_count()) {
      const SlotBits none = asking_;
      asking_.reset();
      // Nobody holds a copy. In the cluster's first table nobody held anything (a cluster
      // started, or started again whole): serve them now. Later tables: a previous owner may
      // still hand them over, and the keeper's wait ends the rest.
      if (t.epoch() == 1) apply(keeper_.nobody_holds(none));
      return;
    }
    std::map<std::string, SlotBits> by_replica;
    for (uint32_t s = asking_._Find_first(); s < kSlotCount; s = asking_._Find_next(s)) {
      const std::vector<uint16_t> holders = t.replicas(s);
      if (ask_rank_ >= holders.size()) continue;
      const std::string& id = t.members()[holders[ask_rank_]];
      if (id != cfg_.node_id && live(id)) by_replica[id].set(s);
    }
    ++ask_rank_;
    for (const auto& [id, slots] : by_replica) {
      auto m = known_.find(id);
      if (m == known_.end()) continue;
      wire::CopyBack q;
      q.set_from(cfg_.node_id);
      q.set_epoch(t.epoch());
      q.set_slots(slots_to_bytes(slots));
      ++asks_out_;
      peer(m->second.addr)
          .call(kPeerCopyBack, q.SerializeAsString(), kAskDeadline,
                [this, id = id, slots = slots](PeerStatus st, std::string body) {
                  --asks_out_;
                  wire::CopyBack a;
                  SlotBits coming;
                  if (st == PeerStatus::kOk && a.ParseFromString(body) &&
                      slots_from_bytes(a.slots(), coming)) {
                    coming &= slots;
                    asking_ &= ~coming;
                    if (coming.any()) {
                      copies_came_back_ = true;
                      spdlog::info("replica {} sends back its copy of {} slots", id,
                                   coming.count());
                    }
                  }
                  ask_copies();
                });
    }
  }
}

void Cluster::on_copy_back(std::string body, PeerServer::Respond respond) {
  wire::CopyBack q;
  SlotBits asked;
  if (!q.ParseFromString(body) || !slots_from_bytes(q.slots(), asked)) {
    return respond(PeerStatus::kError, {}, "malformed copy-back");
  }
  const SlotTable& t = agreement_->table();
  if (q.recover()) {
    // Any copy held here of slots not served here — spare, or a replica's whole one — unless
    // a newer table than the asker's gives them to someone else.
    SlotBits offer = asked & replicator_->any_copy() & ~keeper_.held();
    if (t.epoch() > q.epoch()) {
      for (uint32_t s = offer.any() ? offer._Find_first() : kSlotCount; s < kSlotCount;
           s = offer._Find_next(s)) {
        if (t.owner(s) == kNoOwner || t.owner_id(s) != q.from()) offer.reset(s);
      }
    }
    wire::CopyBack a;
    a.set_from(cfg_.node_id);
    a.set_epoch(t.epoch());
    a.set_slots(slots_to_bytes(offer));
    a.set_whole(slots_to_bytes(offer & replicator_->complete()));
    if (const SlotBits sending = asked & state_here(); sending.any()) {
      a.set_sending(slots_to_bytes(sending));
    }
    respond(PeerStatus::kOk, a.SerializeAsString(), {});
    if (!q.probe() && offer.any()) {
      spdlog::info("sending {} a copy of {} slots it has no other copy of", q.from(),
                   offer.count());
      hand_off(q.from(), offer, true);
    }
    return;
  }
  // Only whole copies, of slots the asker owns by our table too (not one a failover gave to
  // someone else meanwhile), and never a slot this node serves itself.
  const int from = t.index_of(q.from());
  SlotBits send;
  if (from >= 0 && !leaving_) {
    const SlotBits whole = asked & replicator_->complete() & ~keeper_.held();
    for (uint32_t s = whole._Find_first(); s < kSlotCount; s = whole._Find_next(s)) {
      if (t.owner(s) == static_cast<uint16_t>(from)) send.set(s);
    }
  }
  wire::CopyBack a;
  a.set_from(cfg_.node_id);
  a.set_epoch(t.epoch());
  a.set_slots(slots_to_bytes(send));
  respond(PeerStatus::kOk, a.SerializeAsString(), {});
  if (send.any()) hand_off(q.from(), send, true);
}

// Recovery. A node given slots with no copy of their state here (the owner died while a
// join or a leave was moving its replicas, so the table's replica holds nothing) answers their
// policies' fail mode for cluster-empty-grace; meanwhile it asks every member it can reach,
// leaving ones too, whether it holds a copy: spares (a replica's copy that a newer table
// stopped keeping, a hand-off's sender's) live for a minute after they stop being kept.
namespace {
constexpr auto kProbeDeadline = std::chrono::milliseconds(1000);
}  // namespace

void Cluster::recover(const SlotBits& slots) {
  recover_want_ |= slots;
  if (recover_out_ == 0 && fetching_.empty()) recovery_round();
}

void Cluster::recovery_round() {
  recovering_ = recover_want_ & lost_;
  recover_want_.reset();
  offers_.clear();
  if (recovering_.none()) return;
  const SlotTable& t = agreement_->table();
  wire::CopyBack q;
  q.set_from(cfg_.node_id);
  q.set_epoch(t.epoch());
  q.set_slots(slots_to_bytes(recovering_));
  q.set_probe(true);
  q.set_recover(true);
  const std::string body = q.SerializeAsString();
  for (const auto& [id, m] : membership_->others()) {
    if (!m.live() && m.state != MemberState::kLeft) continue;
    auto k = known_.find(id);
    if (k == known_.end()) continue;
    ++recover_out_;
    peer(k->second.addr)
        .call(kPeerCopyBack, body, kProbeDeadline, [this, id = id](PeerStatus st, std::string b) {
          wire::CopyBack a;
          Offer o;
          if (st == PeerStatus::kOk && a.ParseFromString(b) && slots_from_bytes(a.slots(), o.any) &&
              (a.whole().empty() || slots_from_bytes(a.whole(), o.whole)) &&
              (a.sending().empty() || slots_from_bytes(a.sending(), o.sending))) {
            o.any &= recovering_;
            o.whole &= o.any;
            o.sending &= recovering_;
            if (o.any.any() || o.sending.any()) offers_[id] = o;
          }
          if (--recover_out_ == 0) recovery_chosen();
        });
  }
  if (recover_out_ == 0) recovery_chosen();
}

void Cluster::recovery_chosen() {
  SlotBits want = recovering_ & lost_;  // (the grace may have ended, the table moved them)
  recovering_.reset();
  // The owner's state itself, held by a member that has not handed it over yet (a leaving
  // node whose receiver died, a node still on an older table): it comes by hand-off, and
  // any copy is older. Asked again shortly, for a bounded time.
  SlotBits sending;
  for (const auto& [id, o] : offers_) sending |= want & o.sending;
  const int64_t now = now_ns();
  if (sending.none()) {
    sending_since_ns_ = 0;
  } else {
    if (sending_since_ns_ == 0) sending_since_ns_ = now;
    if (now - sending_since_ns_ < kSendingWaitNs) {
      spdlog::info("{} slots given to this node are on their way from their previous owner",
                   sending.count());
      want &= ~sending;
      recover_retry_ |= sending;
      recover_retry_at_ns_ = now + 200'000'000;
    }
  }
  // A whole copy, where one is left (its owner's replica until it died: the freshest), is
  // installed as it is, from one member (by id: `offers_` is ordered).
  std::map<std::string, SlotBits> install;
  for (const auto& [id, o] : offers_) {
    const SlotBits take = want & o.whole;
    if (take.any()) install[id] |= take;
    want &= ~take;
  }
  // Else every copy left — this node's own, spares, replicas' copies not whole — is merged
  // into this node's (actors/merge.hpp: what any of them admitted stays admitted) before
  // the slots are served. Which copy is the freshest, nobody can tell.
  SlotBits found = want & replicator_->any_copy();
  std::map<std::string, SlotBits> merge;
  for (const auto& [id, o] : offers_) {
    const SlotBits take = want & o.any;
    if (take.any()) merge[id] = take;
    found |= take;
  }
  offers_.clear();
  const SlotTable& t = agreement_->table();
  auto ask = [&](const std::string& id, const SlotBits& slots, bool merged) {
    auto k = known_.find(id);
    if (k == known_.end()) return false;
    spdlog::info("{} holds {} copy of {} slots that have none here: asking for it", id,
                 merged ? "a partial" : "a whole", slots.count());
    wire::CopyBack q;
    q.set_from(cfg_.node_id);
    q.set_epoch(t.epoch());
    q.set_slots(slots_to_bytes(slots));
    q.set_recover(true);
    peer(k->second.addr)
        .call(kPeerCopyBack, q.SerializeAsString(), kProbeDeadline,
              [this, id, merged](PeerStatus st, std::string) {
                if (st != PeerStatus::kOk && merged && fetching_.erase(id) && fetching_.empty()) {
                  gathered();  // (it will not come)
                }
              });
    return true;
  };
  for (const auto& [id, slots] : install) ask(id, slots, false);
  merging_ |= found;
  for (const auto& [id, slots] : merge) {
    if (ask(id, slots, true)) fetching_[id] = slots;
  }
  want &= ~found;
  if (want.any()) {
    spdlog::warn("no member holds a copy of {} slots given to this node", want.count());
  }
  if (fetching_.empty()) {
    gathered();
  } else {
    constexpr int64_t kGatherNs = 3'000'000'000;
    gather_until_ns_ = now_ns() + kGatherNs;
  }
}

void Cluster::gathered() {
  fetching_.clear();
  const SlotBits serve = merging_ & lost_;
  merging_.reset();
  if (serve.any()) serve_own_copy(serve);
  if (recover_want_.any() && recover_out_ == 0) recovery_round();
}

SlotBits Cluster::state_here() const {
  SlotBits here = keeper_.held() & ~lost_;
  for (const auto& o : outgoing_)
    if (!o->copy) here |= o->slots;
  return here;
}

// Slots with no whole copy anywhere, served from what this node gathered of them: its own
// partial copy (a replica's whose owner changed before it was made whole again, a spare)
// merged with every other member's.
void Cluster::serve_own_copy(const SlotBits& slots) {
  const SlotBits now = out_of_grace(slots);
  if (now.none()) return;
  counters_.slots_promoted.fetch_add(now.count(), std::memory_order_relaxed);
  spdlog::info("serving {} slots from the copies gathered of them (no whole copy anywhere)",
               now.count());
  auto job = std::make_shared<InstallJob>();  // (no clear: the copy here is what it serves)
  job->slots = now;
  pool_.install(job, {});
  dirty_ = true;
}

// Spares: each owner is asked, at most twice a second, whether it holds the slots and its
// replicas hold them whole; those it does are let go. A leaving node asks about every copy it
// still holds (its leave is done when none is left), each tick its last answers are in: its
// exit waits on them (a healthy leave's new owners' replicas are whole within a few
// replication rounds), and a tick's pace does not depend on the node's clock moving.
void Cluster::check_spares(int64_t now) {
  constexpr int64_t kAskEveryNs = 500'000'000;
  if (holds_out_ > 0 || (!leaving_ && now - holds_asked_ns_ < kAskEveryNs)) return;
  SlotBits mine = replicator_->spares();
  if (leaving_) mine |= replicator_->any_copy();
  mine &= ~keeper_.held();
  held_elsewhere_ &= mine;
  if (mine.none()) return;
  holds_asked_ns_ = now;
  const SlotTable& t = agreement_->table();
  std::map<uint16_t, SlotBits> by_owner;
  for (uint32_t s = mine._Find_first(); s < kSlotCount; s = mine._Find_next(s)) {
    const uint16_t o = t.owner(s);
    if (o != kNoOwner && t.members()[o] != cfg_.node_id) by_owner[o].set(s);
  }
  for (const auto& [o, slots] : by_owner) {
    const std::string& id = t.members()[o];
    auto k = known_.find(id);
    if (k == known_.end() || !live(id)) continue;
    wire::CopyBack q;
    q.set_from(cfg_.node_id);
    q.set_epoch(t.epoch());
    q.set_slots(slots_to_bytes(slots));
    ++holds_out_;
    peer(k->second.addr)
        .call(kPeerHolds, q.SerializeAsString(), kProbeDeadline,
              [this, asked = slots, addr = k->second.addr](PeerStatus st, std::string b) {
                --holds_out_;
                wire::CopyBack a;
                SlotBits held, whole;
                if (st != PeerStatus::kOk || !a.ParseFromString(b) ||
                    !slots_from_bytes(a.slots(), held) || !slots_from_bytes(a.whole(), whole)) {
                  return;
                }
                // (an owner that let them go to a newer table: that table says who has them)
                agreement_->heard_table(addr, a.epoch(), a.planner());
                held &= asked;
                whole &= held;
                held_elsewhere_ = (held_elsewhere_ & ~asked) | held;
                if (whole.any()) replicator_->release_spares(whole);
              });
  }
}

void Cluster::on_holds(std::string body, PeerServer::Respond respond) {
  wire::CopyBack q;
  SlotBits asked;
  if (!q.ParseFromString(body) || !slots_from_bytes(q.slots(), asked)) {
    return respond(PeerStatus::kError, {}, "malformed holds");
  }
  const SlotBits held = asked & keeper_.held() & ~lost_;
  wire::CopyBack a;
  a.set_from(cfg_.node_id);
  a.set_epoch(agreement_->table().epoch());
  a.set_planner(agreement_->table().planner());
  a.set_slots(slots_to_bytes(held));
  a.set_whole(slots_to_bytes(held & replicator_->whole_everywhere()));
  respond(PeerStatus::kOk, a.SerializeAsString(), {});
}

}  // namespace fg
