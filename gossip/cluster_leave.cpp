// A graceful exit: plan a table without this node, hand its slots over, say goodbye.
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

void Cluster::start_leave() {
  leaving_ = true;
  const SlotTable& t = agreement_->table();
  std::vector<std::string> rest;
  for (const auto& id : membership_->live_ids())
    if (id != cfg_.node_id) rest.push_back(id);
  if (t.epoch() > 0 && !rest.empty()) {
    agreement_->propose(t.plan(rest, cfg_.replicas).stamped(t.epoch() + 1, cfg_.node_id));
  }
  membership_->leave(now_ns());
}

bool Cluster::left(bool& clean) const {
  clean = !lost_on_leave_;
  return outgoing_.empty() && extracting_ == 0;
}

bool Cluster::leave(std::chrono::milliseconds max_wait) {
  // Shared with the cluster thread, which may still run these after we gave up waiting.
  auto planned = std::make_shared<std::atomic<bool>>(false);
  auto drained = std::make_shared<std::atomic<bool>>(false);
  asio::post(io_, [this, planned] {
    start_leave();
    *planned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!*planned) continue;
    auto lost = std::make_shared<std::atomic<bool>>(false);
    asio::post(io_, [this, drained, lost] {
      bool clean = true;
      *drained = left(clean);
      *lost = !clean;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (*drained) return !*lost;
  }
  return false;
}

}  // namespace fg
