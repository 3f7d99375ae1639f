// Fencing: a node that finds the cluster went on without it (a table that no longer lists
// it, or lists it only since after the last table it knew) holds stale state — the others'
// replicas took over its slots. It drops all of it, never hands it to anyone, and joins as
// a newcomer whose slots are awaited from their owners.
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

void Cluster::fence(const SlotTable& after) {
  counters_.fenced.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn("the cluster went on without this node (table epoch {}); dropping its state",
               after.epoch());
  keeper_.fence();
  replicator_->fence();
  auto job = std::make_shared<ExtractJob>();
  job->slots.set();
  job->remove = true;
  job->now_ns = pool_.clock()->now_ns();
  pool_.extract(job);  // (the snapshots are discarded)
  publish();
  // From here on, a newcomer: slots the table gives us are awaited from their owners.
  apply(keeper_.on_table(
      SlotTable(), after, [this](const std::string& id) { return can_send(id); }, wall_now_ns()));
  replicator_->on_table(SlotTable(), after);
}

}  // namespace fg
