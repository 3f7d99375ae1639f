// Taking slots in: install each chunk of a hand-off as it arrives (resends are answered
// without installing twice) and start serving the slots with the last one.
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

void Cluster::on_handoff(std::string body, PeerServer::Respond respond) {
  wire::SlotHandoff h;
  SlotBits slots;
  std::vector<EntrySnapshot> entries;
  if (!h.ParseFromString(body) || !slots_from_bytes(h.slots(), slots) ||
      !decode_state(h.state(), entries)) {
    return respond(PeerStatus::kError, {}, "malformed hand-off");
  }
  SlotBits fresh;
  if (!h.fresh().empty() && !slots_from_bytes(h.fresh(), fresh)) {
    return respond(PeerStatus::kError, {}, "malformed hand-off");
  }
  const auto key = std::make_pair(h.from(), h.handoff_id());
  auto done = installed_.find(key);
  if (done != installed_.end() && done->second > h.chunk()) {
    return respond(PeerStatus::kOk, {}, {});  // a resend of what is already installed
  }
  if (h.copy()) {
    // A copy asked for: only into slots still waiting for their state (fixed at its first
    // chunk), never over state served here meanwhile — the owner's own hand-off, or the
    // grace's end, came first. Copies being gathered are merged, not installed.
    auto into = copy_into_.find(key);
    if (into == copy_into_.end()) {
      if (copy_into_.size() > 1000) copy_into_.clear();
      // (slots in their grace are held — the keeper counts them served — but have no state)
      into =
          copy_into_.emplace(key, slots & (lost_ | (keeper_.awaiting() & ~keeper_.held()))).first;
    }
    const SlotBits allowed = into->second & (lost_ | (keeper_.awaiting() & ~keeper_.held()));
    if (h.last()) copy_into_.erase(into);
    const SlotBits gather = allowed & merging_;
    if (gather.any()) return gather_copy(h, gather, std::move(entries), std::move(respond));
    slots &= allowed;
    fresh &= allowed;
    entries.erase(
        std::remove_if(entries.begin(), entries.end(),
                       [&](const EntrySnapshot& e) { return !allowed.test(key_slot(e.key)); }),
        entries.end());
  }
  auto job = std::make_shared<InstallJob>();
  if (h.last()) job->slots = slots;
  if (h.chunk() == 0) job->clear = slots;  // a replica's older copy of them goes first
  const size_t n = entries.size();
  job->done = [this, key, n, last = h.last(), chunk = h.chunk(), epoch = h.epoch(), slots, fresh,
               respond = std::move(respond)](InstallJob&) mutable {
    asio::post(io_, [this, key, n, last, chunk, epoch, slots, fresh, respond = std::move(respond)] {
      if (installed_.size() > 100000) installed_.clear();
      installed_[key] = chunk + 1;
      counters_.handoffs_received.fetch_add(1, std::memory_order_relaxed);
      counters_.keys_received.fetch_add(n, std::memory_order_relaxed);
      if (last) {
        spdlog::info("received {} slots from {}", slots.count(), key.first);
        started_empty(fresh & slots, now_ns());  // (their freshness moves with them)
        // Slots held back for want of a copy (their hand-off came late): here now.
        if ((slots & lost_).any()) end_grace(slots & lost_, "a copy of their state came back");
        apply(keeper_.on_install(slots, epoch, agreement_->table()));
      }
      respond(PeerStatus::kOk, {}, {});
    });
  };
  pool_.install(job, std::move(entries));
}

// A partial copy of slots this node is gathering every copy of (copy_back.cpp): merged into
// its own, not served yet; the sender's last chunk says its copy is all here.
void Cluster::gather_copy(const wire::SlotHandoff& h, const SlotBits& slots,
                          std::vector<EntrySnapshot> entries, PeerServer::Respond respond) {
  entries.erase(
      std::remove_if(entries.begin(), entries.end(),
                     [&](const EntrySnapshot& e) { return !slots.test(key_slot(e.key)); }),
      entries.end());
  auto job = std::make_shared<MergeJob>();
  job->into_copies = slots;
  const size_t n = entries.size();
  job->done = [this, key = std::make_pair(h.from(), h.handoff_id()), chunk = h.chunk(),
               last = h.last(), n, respond = std::move(respond)](MergeJob&) mutable {
    asio::post(io_, [this, key, chunk, last, n, respond = std::move(respond)] {
      installed_[key] = chunk + 1;
      counters_.keys_received.fetch_add(n, std::memory_order_relaxed);
      if (last && fetching_.erase(key.first)) {
        spdlog::info("merged the copy {} held", key.first);
        if (fetching_.empty()) gathered();
      }
      respond(PeerStatus::kOk, {}, {});
    });
  };
  pool_.merge(job, std::move(entries));
}

}  // namespace fg
