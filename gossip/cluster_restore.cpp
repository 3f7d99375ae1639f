// State loaded from disk finding its owners: once this node is in a table, each restored key
// goes to its slot's owner (this node or another) and is merged into what the owner serves;
// what an owner does not serve yet comes back and is sent again, until the give-up time.
#include <spdlog/spdlog.h>

#include <map>

#include "cluster.hpp"
#include "state_codec.hpp"

namespace fg {
namespace {
constexpr int64_t kRetryNs = 250'000'000;
constexpr size_t kMergeChunkBytes = 4 << 20;
constexpr auto kMergeDeadline = std::chrono::seconds(10);

std::vector<EntrySnapshot> refused_of(MergeJob& j) {
  std::vector<EntrySnapshot> out;
  for (auto& part : j.refused)
    for (auto& e : part) out.push_back(std::move(e));
  return out;
}
}  // namespace

void Cluster::restore(std::vector<EntrySnapshot> entries, uint64_t saved_epoch,
                      int64_t give_up_ms) {
  restored_ = std::move(entries);
  restore_epoch_ = saved_epoch;
  restore_from_disk_ = true;
  restore_give_up_ms_ = give_up_ms;
  restoring_ = !restored_.empty();
  counters_.restore_pending.store(restored_.size(), std::memory_order_relaxed);
}

void Cluster::restored_back(std::vector<EntrySnapshot> entries) {
  if (restored_.empty()) {
    restored_ = std::move(entries);
  } else {
    restored_.insert(restored_.end(), std::make_move_iterator(entries.begin()),
                     std::make_move_iterator(entries.end()));
  }
}

void Cluster::push_restored(int64_t now_ns) {
  if (restore_in_flight_ > 0 || now_ns < restore_next_ns_) return;
  const auto r = hub_.get();
  if (r->epoch == 0 || r->self_index < 0 || !r->quorum) return;  // not in a table yet
  if (asks_out_ > 0) return;  // (whether replicas hold copies of our slots decides below)
  if (restore_deadline_ns_ == 0) {
    restore_deadline_ns_ = now_ns + restore_give_up_ms_ * 1'000'000;
    if (restore_from_disk_) {
      restore_from_disk_ = false;  // (decided once; a later fence merges in full)
      // The cluster went on since the save: a newer table; or this process was restarted
      // before the others noticed it was gone — its table lists it as a member since before
      // that table, or its replicas gave copies of its slots back (copy_back.cpp): what
      // they hold is newer than the snapshot.
      const SlotTable& t = agreement_->table();
      restore_fresh_only_ = r->epoch > restore_epoch_ || t.member_since(cfg_.node_id) < t.epoch() ||
                            copies_came_back_;
      counters_.restore_superseded.store(restore_fresh_only_ ? 1 : 0, std::memory_order_relaxed);
      if (restore_fresh_only_) {
        spdlog::info(
            "the cluster went on since the snapshot (table epoch {}, saved under {}): its copies "
            "are newer; the snapshot goes only into slots that lost every copy",
            r->epoch, restore_epoch_);
      }
    } else {
      restore_fresh_only_ = false;
    }
  }
  counters_.restore_pending.store(restored_.size(), std::memory_order_relaxed);
  if (restored_.empty()) {
    spdlog::info("every key restored from disk is merged at its owner");
    restoring_ = false;
    return;
  }
  if (now_ns >= restore_deadline_ns_) {
    spdlog::warn("{} keys restored from disk found no owner to take them in {} ms; dropped",
                 restored_.size(), restore_give_up_ms_);
    counters_.restore_dropped.fetch_add(restored_.size(), std::memory_order_relaxed);
    counters_.restore_pending.store(0, std::memory_order_relaxed);
    restored_.clear();
    restoring_ = false;
    return;
  }
  restore_next_ns_ = now_ns + kRetryNs;
  const auto self = static_cast<uint16_t>(r->self_index);
  std::map<uint16_t, std::vector<EntrySnapshot>> by_owner;
  std::vector<EntrySnapshot> keep;
  for (EntrySnapshot& e : restored_) {
    const uint32_t slot = key_slot(e.key);
    const uint16_t o = r->owner[slot];
    const bool ready = o != kNoOwner && (o == self ? r->serving.test(slot) || lost_.test(slot)
                                                   : r->nodes[o].state == MemberState::kAlive);
    (ready ? by_owner[o] : keep).push_back(std::move(e));
  }
  restored_ = std::move(keep);
  for (auto& [o, entries] : by_owner) {
    if (o == self) {
      SlotBits found;
      for (const EntrySnapshot& e : entries) found.set(key_slot(e.key));
      end_grace(found, "a copy of their state came back");
      ++restore_in_flight_;
      auto job = std::make_shared<MergeJob>();
      job->fresh = fresh_slots(now_ns);
      job->fresh_only = restore_fresh_only_;
      job->done = [this](MergeJob& j) {
        auto back = refused_of(j);
        const size_t merged = j.merged.load(std::memory_order_relaxed);
        asio::post(io_, [this, merged, back = std::move(back)]() mutable {
          counters_.keys_merged.fetch_add(merged, std::memory_order_relaxed);
          restored_back(std::move(back));
          --restore_in_flight_;
        });
      };
      pool_.merge(job, std::move(entries));
      continue;
    }
    for (auto& part : split_by_bytes(entries, kMergeChunkBytes)) {
      ++restore_in_flight_;
      auto sent = std::make_shared<std::vector<EntrySnapshot>>(std::move(part));
      peer(r->nodes[o].peer_addr)
          .call(restore_fresh_only_ ? kPeerMergeIntoFresh : kPeerMerge, encode_state(*sent),
                kMergeDeadline, [this, sent](PeerStatus st, std::string body) {
                  std::vector<EntrySnapshot> back;
                  if (st != PeerStatus::kOk || !decode_state(body, back)) back = std::move(*sent);
                  restored_back(std::move(back));
                  --restore_in_flight_;
                });
    }
  }
}

void Cluster::on_merge(std::string body, PeerServer::Respond respond, bool fresh_only) {
  std::vector<EntrySnapshot> entries;
  if (!decode_state(body, entries)) return respond(PeerStatus::kError, {}, "malformed merge");
  // State for slots held back for want of any copy: it is here now. (The install reaches
  // each shard before the merge: one mailbox, in order.)
  if (lost_.any()) {
    SlotBits found;
    for (const EntrySnapshot& e : entries) {
      const uint32_t s = key_slot(e.key);
      if (lost_.test(s)) found.set(s);
    }
    end_grace(found, "a copy of their state came back");
    if (dirty_) publish();
  }
  auto job = std::make_shared<MergeJob>();
  job->fresh = fresh_slots(now_ns());
  job->fresh_only = fresh_only;
  job->done = [this, respond = std::move(respond)](MergeJob& j) mutable {
    const std::string back = encode_state(refused_of(j));
    const size_t merged = j.merged.load(std::memory_order_relaxed);
    asio::post(io_, [this, merged, back, respond = std::move(respond)] {
      counters_.keys_merged.fetch_add(merged, std::memory_order_relaxed);
      respond(PeerStatus::kOk, back, {});
    });
  };
  pool_.merge(job, std::move(entries));
}

}  // namespace fg
