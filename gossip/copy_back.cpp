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
  // Only whole copies, of slots the asker owns by our table too (not one a failover gave to
  // someone else meanwhile), and never a slot this node serves itself.
  const SlotTable& t = agreement_->table();
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

}  // namespace fg
