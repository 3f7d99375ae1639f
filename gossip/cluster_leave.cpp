// A graceful exit: plan a table without this node, hand its slots over, say goodbye — and
// stay until what it held is held elsewhere, by as many copies as before (cluster.hpp).
#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

void Cluster::start_leave() {
  if (leaving_) return;
  leaving_ = true;
  leave_started_ns_ = now_ns();
  leave_started_steady_ = std::chrono::steady_clock::now();
  leave_logged_ns_ = leave_started_ns_;
  replicator_->keep_spares();  // (every copy here is one until its owner holds it whole)
  const SlotTable& t = agreement_->table();
  std::vector<std::string> rest;
  for (const auto& id : membership_->live_ids())
    if (id != cfg_.node_id) rest.push_back(id);
  if (t.epoch() > 0 && !rest.empty()) {
    agreement_->propose(t.plan(rest, cfg_.replicas).stamped(t.epoch() + 1, cfg_.node_id));
  }
  leave_alone_ = rest.empty();  // (the last member: nobody to hand anything to)
  membership_->leave(now_ns());
  note_leave(now_ns());
}

LeaveProgress Cluster::leave_progress() const {
  LeaveProgress p;
  p.leaving = leaving_;
  if (!leaving_) return p;
  // (the node's clock, or the machine's when that one stands still: a node given a clock
  // it does not move must still leave)
  const auto steady = std::chrono::steady_clock::now() - leave_started_steady_;
  p.waited_ms =
      std::max<int64_t>((now_ns() - leave_started_ns_) / 1'000'000,
                        std::chrono::duration_cast<std::chrono::milliseconds>(steady).count());
  SlotBits here = keeper_.held();
  for (const auto& o : outgoing_)
    if (!o->copy) here |= o->slots;
  const SlotBits copies = (replicator_->spares() | replicator_->any_copy()) & ~here;
  p.last_copy = here.count() + (copies & ~held_elsewhere_).count();
  p.fewer_copies = (copies & held_elsewhere_).count();
  // Every other member leaving too, or gone (the whole cluster stopped at once): nobody can
  // take anything, and waiting would hold every one of them forever. What this node held
  // is in the file it saved before leaving, if it saves.
  bool anyone = false;
  for (const auto& [id, m] : membership_->others()) anyone = anyone || m.live();
  p.nobody_left = !anyone;
  p.done = leave_alone_ || p.nobody_left ||
           (p.last_copy == 0 && p.fewer_copies == 0 && extracting_ == 0 && outgoing_.empty());
  return p;
}

bool Cluster::left(bool& clean) const {
  const LeaveProgress p = leave_progress();
  clean = p.done && !lost_on_leave_ && !(p.nobody_left && p.last_copy > 0);
  if (p.done) return true;
  // Past the wait, what is held elsewhere may go with fewer copies; a last copy never.
  return p.waited_ms * 1'000'000 >= kLeaveWaitNs && p.last_copy == 0 && extracting_ == 0 &&
         outgoing_.empty();
}

// The leave's progress for /readyz, and in the log every 10 s while it takes long.
void Cluster::note_leave(int64_t now) {
  const LeaveProgress p = leave_progress();
  std::string status;
  if (p.done && p.nobody_left && !leave_alone_) {
    status = "leaving: every other member is leaving or gone; nobody can take this node's state";
  } else if (p.done) {
    status = "leaving: every slot's state is held elsewhere";
  } else if (p.last_copy > 0) {
    status = "leaving: the only reachable copy of " + std::to_string(p.last_copy) +
             " slots is here; waiting for a member to hold them";
    if (p.waited_ms * 1'000'000 >= kLeaveWaitNs) {
      status += " (it will not exit on its own: a second SIGTERM exits anyway, losing them)";
    }
  } else {
    status = "leaving: waiting for " + std::to_string(p.fewer_copies) +
             " slots to be whole on their owners' replicas";
  }
  bool changed;
  {
    std::lock_guard<std::mutex> lock(leave_mu_);
    changed = status != leave_status_;
    leave_status_ = status;
  }
  last_copies_.store(p.done ? 0 : p.last_copy, std::memory_order_relaxed);
  if (changed) dirty_ = true;
  // The others no longer gossip to a leaving node: it asks for their newest table itself,
  // a member of its own at a time, twice a second.
  constexpr int64_t kAskTableNs = 500'000'000;
  if (!p.done && now - leave_asked_ns_ >= kAskTableNs) {
    leave_asked_ns_ = now;
    const auto& ids = agreement_->table().members();
    for (size_t k = 0; k < ids.size(); ++k) {
      const std::string& id = ids[(leave_ask_next_ + k) % ids.size()];
      auto m = known_.find(id);
      if (id == cfg_.node_id || m == known_.end() || m->second.state == MemberState::kDead)
        continue;
      agreement_->ask_table(m->second.addr);
      leave_ask_next_ = (leave_ask_next_ + k + 1) % ids.size();
      break;
    }
  }
  if (!p.done && now - leave_logged_ns_ >= 10'000'000'000) {
    leave_logged_ns_ = now;
    spdlog::warn("{} ({} s so far)", status, p.waited_ms / 1000);
  }
}

bool Cluster::leave(std::chrono::milliseconds max_wait) {
  // Shared with the cluster thread, which may still run these after we gave up waiting.
  auto planned = std::make_shared<std::atomic<bool>>(false);
  auto drained = std::make_shared<std::atomic<bool>>(false);
  auto lost = std::make_shared<std::atomic<bool>>(false);
  asio::post(io_, [this, planned] {
    start_leave();
    *planned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!*planned) continue;
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
