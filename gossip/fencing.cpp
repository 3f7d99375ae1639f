// Fencing: a node that finds the cluster went on without it (a table that no longer lists
// it, or lists it only since after the last table it knew) holds stale state — the others'
// replicas took over its slots, or served them from empty. It stops serving all of it,
// never hands it out as the slots' state, and joins as a newcomer whose slots are awaited
// from their owners. What it held is not thrown away: every key goes to its slot's current
// owner and is merged there (cluster_restore.cpp), so what this side admitted while cut off
// is not forgotten.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

void Cluster::fence(const SlotTable& after) {
  counters_.fenced.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn(
      "the cluster went on without this node (table epoch {}); its state goes to the slots' "
      "owners, to be merged",
      after.epoch());
  keeper_.fence();
  lost_.reset();
  grace_.clear();
  std::fill(empty_at_ns_.begin(), empty_at_ns_.end(), 0);
  replicator_->fence();
  auto job = std::make_shared<ExtractJob>();
  job->slots.set();
  job->remove = true;
  job->now_ns = pool_.clock()->now_ns();
  job->done = [this](ExtractJob& j) {
    std::vector<EntrySnapshot> all;
    for (auto& part : j.per_shard)
      for (auto& e : part) all.push_back(std::move(e));
    asio::post(io_, [this, all = std::move(all)]() mutable {
      if (all.empty()) return;
      counters_.keys_fenced.fetch_add(all.size(), std::memory_order_relaxed);
      restored_back(std::move(all));
      restoring_ = true;
      restore_deadline_ns_ = 0;  // (a fresh give-up time from the next table on)
      restore_from_disk_ = false;
    });
  };
  pool_.extract(job);
  publish();
  // From here on, a newcomer: slots the table gives us are awaited from their owners.
  apply(keeper_.on_table(
      SlotTable(), after, [this](const std::string& id) { return can_send(id); }, now_ns()));
  replicator_->on_table(SlotTable(), after);
}

}  // namespace fg
