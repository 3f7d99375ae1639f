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

}  // namespace fg
