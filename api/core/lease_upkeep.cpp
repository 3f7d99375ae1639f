// Heartbeats, release-alls and watch releases the node sends on its connections' behalf.
#include "lease_upkeep.hpp"

#include <spdlog/spdlog.h>

#include "request_job.hpp"
#include "services.hpp"

namespace fg {

namespace {
// `names`: what each request is about, for the log; also keeps the requests' views alive.
void run(Services& svc, const char* what, std::shared_ptr<std::vector<std::string>> names,
         std::vector<Request> requests) {
  if (requests.empty() || svc.lanes.empty()) return;
  Door door;
  door.count = false;  // the node's own upkeep, not a client's request
  RequestJob::start(svc, svc.lane(), std::move(requests), door, names,
                    [what, names](std::vector<Outcome>& outcomes) {
                      for (size_t i = 0; i < outcomes.size(); ++i) {
                        if (!outcomes[i].ok()) {
                          spdlog::debug("{} {}: {}", what, (*names)[i], outcomes[i].error);
                        }
                      }
                    });
}
}  // namespace

void renew_bound_leases(Services& svc, int64_t now_ms) {
  if (!svc.bound) return;
  auto holders = std::make_shared<std::vector<std::string>>();
  std::vector<int64_t> ttls;
  for (auto& [holder, ttl_ms] : svc.bound->due(now_ms)) {
    holders->push_back(std::move(holder));
    ttls.push_back(ttl_ms);
  }
  std::vector<Request> requests(holders->size());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].verb = Verb::kHeartbeat;
    requests[i].holder = (*holders)[i];
    requests[i].ttl_ms = ttls[i];
  }
  run(svc, "bound lease upkeep for", holders, std::move(requests));
}

void release_bound_leases(Services& svc, uint64_t client_id) {
  if (!svc.bound) return;
  auto holders = std::make_shared<std::vector<std::string>>(svc.bound->unbind(client_id));
  std::vector<Request> requests(holders->size());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].verb = Verb::kReleaseAll;
    requests[i].holder = (*holders)[i];
  }
  run(svc, "bound lease upkeep for", holders, std::move(requests));
}

void give_back_unreplicated(Services& svc, const Batch& b) {
  auto keys = std::make_shared<std::vector<std::string>>();
  std::vector<uint64_t> leases;
  for (const ShardOp& op : b.ops) {
    if (op.code == OpCode::kAcquire && op.status == OpStatus::kNotReplicated &&
        op.acquire.granted) {
      keys->emplace_back(op.key);
      leases.push_back(op.acquire.lease_id);
    }
  }
  std::vector<Request> requests(keys->size());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].verb = Verb::kRelease;
    requests[i].key = (*keys)[i];
    requests[i].lease = leases[i];
  }
  run(svc, "giving back an unreplicated lease of", keys, std::move(requests));
}

void give_back_waits(Services& svc, std::vector<Waiter> waiters) {
  auto keys = std::make_shared<std::vector<std::string>>();
  std::vector<Request> requests;
  for (Waiter& w : waiters) keys->push_back(std::move(w.key));
  for (size_t i = 0; i < waiters.size(); ++i) {
    if (waiters[i].cost <= 0) continue;
    Request& r = requests.emplace_back();
    r.verb = Verb::kAdjust;
    r.key = (*keys)[i];
    r.spec = waiters[i].spec;
    r.cost = -waiters[i].cost;
  }
  run(svc, "giving back a waiting take's place on", keys, std::move(requests));
}

void release_watches(Services& svc, std::vector<std::string> keys) {
  if (keys.empty() || svc.lanes.empty()) return;
  struct Kept {
    std::vector<std::string> keys;
    std::deque<std::vector<std::string_view>> argvs;
  };
  auto kept = std::make_shared<Kept>();
  kept->keys = std::move(keys);
  std::vector<Request> requests(kept->keys.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& words =
        kept->argvs.emplace_back(std::vector<std::string_view>{"unwatch", kept->keys[i]});
    requests[i].verb = Verb::kData;
    requests[i].data = DataCmd::kUnwatch;
    requests[i].key = kept->keys[i];
    requests[i].args = &words;
  }
  Door door;
  door.count = false;
  RequestJob::start(svc, svc.lane(), std::move(requests), door, kept,
                    [](std::vector<Outcome>&) {});  // (a watch not let go expires by itself)
}

}  // namespace fg
