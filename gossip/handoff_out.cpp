// Handing slots to their new owner: extract their state from the shards, send it in
// chunks, and take it back if the receiver dies on the way.
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

namespace {
constexpr auto kRetryDelay = std::chrono::milliseconds(200);
constexpr auto kExtractDelay = std::chrono::milliseconds(2);
}  // namespace

void Cluster::hand_off(const std::string& to, const SlotBits& slots, bool copy) {
  auto job = std::make_shared<ExtractJob>();
  job->slots = slots;
  job->remove = !copy;
  // The sender keeps a spare copy until the receiver holds the slots whole on its replicas
  // too (Replicator::add_spares): should it die first, that copy is what is left.
  job->keep = !copy;
  auto o = std::make_shared<Outgoing>(io_);
  o->to = to;
  o->slots = slots;
  o->epoch = agreement_->table().epoch();
  o->id = next_handoff_++;
  o->copy = copy;
  if (!copy) o->fresh = slots & fresh_slots(now_ns());
  outgoing_.push_back(o);  // (its slots' state is on its way out from now: state_here)
  ++extracting_;
  job->done = [this, o](ExtractJob& j) {
    for (auto& part : j.per_shard)
      for (auto& e : part) o->entries.push_back(std::move(e));
    asio::post(io_, [this, o] {
      --extracting_;
      send_handoff(o);
    });
  };
  // Give batches routed by the previous snapshot (an I/O thread may have read it just
  // before the publish that moved these slots) time to reach the shards: the extraction
  // then includes them instead of their being refused as "not owner".
  o->retry.expires_after(kExtractDelay);
  o->retry.async_wait([this, job](asio::error_code ec) {
    job->now_ns = pool_.clock()->now_ns();
    pool_.extract(job);  // even when cancelled at shutdown: the state must not be lost
    (void)ec;
  });
}

void Cluster::send_handoff(std::shared_ptr<Outgoing> o) {
  auto parts = split_by_bytes(o->entries, cfg_.handoff_chunk_bytes);
  for (size_t i = 0; i < parts.size(); ++i) {
    wire::SlotHandoff h;
    h.set_from(cfg_.node_id);
    h.set_handoff_id(o->id);
    h.set_chunk(static_cast<uint32_t>(i));
    h.set_last(i + 1 == parts.size());
    h.set_epoch(o->epoch);
    h.set_slots(slots_to_bytes(o->slots));
    h.set_state(encode_state(parts[i]));
    if (o->fresh.any()) h.set_fresh(slots_to_bytes(o->fresh));
    h.set_copy(o->copy);
    o->chunks.push_back(h.SerializeAsString());
  }
  spdlog::info("handing {} slots ({} keys) to {}", o->slots.count(), o->entries.size(), o->to);
  send_chunk(o);
}

void Cluster::send_chunk(std::shared_ptr<Outgoing> o) {
  auto it = known_.find(o->to);
  if (it == known_.end() || !membership_->others().count(o->to) ||
      !membership_->others().at(o->to).live()) {
    return reclaim(o);
  }
  // A newer table without the receiver: the others found it dead (a leaving node, which
  // no longer hears who died, learns it so).
  if (agreement_->table().epoch() > o->epoch && agreement_->table().index_of(o->to) < 0) {
    return reclaim(o, true);
  }
  peer(it->second.addr)
      .call(kPeerHandoff, o->chunks[o->next], std::chrono::milliseconds(cfg_.handoff_timeout_ms),
            [this, o](PeerStatus st, std::string) {
              if (st == PeerStatus::kOk) {
                if (++o->next < o->chunks.size()) return send_chunk(o);
                counters_.handoffs_sent.fetch_add(1, std::memory_order_relaxed);
                counters_.keys_sent.fetch_add(o->entries.size(), std::memory_order_relaxed);
                spdlog::info("handed {} slots to {}", o->slots.count(), o->to);
                if (!o->copy) replicator_->add_spares(o->slots & ~keeper_.held());
                outgoing_.erase(std::remove(outgoing_.begin(), outgoing_.end(), o),
                                outgoing_.end());
                return;
              }
              o->retry.expires_after(kRetryDelay);
              o->retry.async_wait([this, o](asio::error_code ec) {
                if (!ec) send_chunk(o);
              });
            });
}

// The receiver is gone: take the state back and keep it until a newer table says where
// it goes (never serve it here unless that table gives it to us).
void Cluster::reclaim(std::shared_ptr<Outgoing> o, bool removed) {
  if (o->copy) {  // (the replica's own copy stayed where it was)
    outgoing_.erase(std::remove(outgoing_.begin(), outgoing_.end(), o), outgoing_.end());
    return;
  }
  spdlog::warn("{} is unreachable; keeping {} slots' state until the next table", o->to,
               o->slots.count());
  outgoing_.erase(std::remove(outgoing_.begin(), outgoing_.end(), o), outgoing_.end());
  auto job = std::make_shared<InstallJob>();
  const uint64_t hold_until = agreement_->table().epoch() + (removed ? 0 : 1);
  if (reclaimed_epoch_ != agreement_->table().epoch()) reclaimed_.clear();
  reclaimed_epoch_ = agreement_->table().epoch();
  reclaimed_[o->to] |= o->slots;
  job->done = [this, slots = o->slots, hold_until](InstallJob&) {
    asio::post(io_, [this, slots, hold_until] {
      apply(keeper_.on_install(slots, hold_until, agreement_->table()));
    });
  };
  // The shards hold it as theirs again (it is the only copy); routing decides whether
  // clients reach it, and the next table that gives it away extracts it from here.
  job->slots = o->slots;
  if (leaving_) lost_on_leave_ = true;
  pool_.install(job, std::move(o->entries));
}

void Cluster::hand_again() {
  const SlotTable& t = agreement_->table();
  if (reclaimed_epoch_ != t.epoch()) {
    reclaimed_.clear();  // (a newer table says where they go)
    return;
  }
  for (auto it = reclaimed_.begin(); it != reclaimed_.end();) {
    const auto& others = membership_->others();
    auto m = others.find(it->first);
    if (m == others.end() || m->second.state != MemberState::kAlive) {
      ++it;
      continue;
    }
    SlotKeeper::Actions a = keeper_.give_again(it->second, it->first, t);
    auto sent = a.send.find(it->first);
    if (sent != a.send.end()) {
      spdlog::info("{} is reachable again: handing it the {} slots taken back", it->first,
                   sent->second.count());
      it->second &= ~sent->second;
      apply(a);
    }
    // (what is not held yet is still being put back into the shards: next tick)
    it = it->second.none() ? reclaimed_.erase(it) : std::next(it);
  }
}

}  // namespace fg
