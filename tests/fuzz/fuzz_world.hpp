// The node a fuzz target drives without sockets or actors: standalone services with two
// policies and one shard, and a cluster twin of them whose routing sends slots 8192-12287 to
// another node, holds 12288-16383 as arriving and serves the rest.
#pragma once
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "command_table.hpp"
#include "request_core.hpp"
#include "shard.hpp"

namespace fuzz {

// Forwards go nowhere: the fuzz target answers them itself.
struct NoForwarder : fg::Forwarder {
  void send(const std::string&, std::string, int64_t,
            std::function<void(bool, std::string)>) override {}
};

struct World {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  fg::ManualClock clock;
  fg::PolicyRegistry policies;
  fg::ClientRegistry clients{1000};
  fg::AclBook acl{fg::acl_catalog(), clock};
  fg::Services svc;
  std::unique_ptr<fg::ShardPool> pool;  // only for shard_of(); ops run in `shard`
  World() {
    cfg.set("scheduler.max-threads", size_t{1});
    sys = std::make_unique<caf::actor_system>(cfg);
    fg::PolicyMap pm;
    pm["free"] = fg::LimitSpec::window(fg::Kind::kSlidingLog, 5, 60'000'000'000);
    pm["conns"] = fg::LimitSpec::concurrency(3, 30'000'000'000);
    policies.replace(pm);
    fg::ShardPoolConfig pc;
    pc.shards = 1;
    pool = std::make_unique<fg::ShardPool>(*sys, pc, &clock);
    svc.shards = pool.get();
    svc.clock = &clock;
    svc.policies = &policies;
    svc.clients = &clients;
    svc.acl = &acl;
    svc.settings.parser.max_bulk_len = 4096;
    svc.settings.parser.max_args = 64;
    // The cluster twin: same shards and settings, plus routing.
    auto r = std::make_shared<fg::Routing>();
    r->epoch = 3;
    fg::RouteNode self, other;
    self.id = "n1";
    self.resp_host = other.resp_host = "127.0.0.1";
    self.resp_port = 7001;
    self.self = self.in_table = true;
    other.id = "n2";
    other.resp_port = 7002;
    other.peer_addr = "127.0.0.1:17002";
    other.in_table = true;
    r->nodes = {self, other};
    r->self_index = 0;
    for (uint32_t s = 0; s < fg::kSlotCount; ++s) {
      r->owner[s] = (s >= 8192 && s < 12288) ? 1 : 0;
      if (s < 8192) r->serving.set(s);
      if (s >= 12288) r->awaiting.set(s);
    }
    r->ranges = {{0, 8191, 0}, {8192, 12287, 1}, {12288, 16383, 0}};
    hub.publish(r);
    csvc.shards = svc.shards;
    csvc.clock = svc.clock;
    csvc.policies = svc.policies;
    csvc.clients = svc.clients;
    csvc.acl = svc.acl;
    csvc.settings = svc.settings;
    csvc.routing = &hub;
    csvc.forwarder = &forwarder;
  }
  fg::RoutingHub hub;
  NoForwarder forwarder;
  fg::Services csvc;
};

inline World& world() {
  static World* w = new World();
  return *w;
}

// Runs the flight's shard ops in `shard` (slot-local, in place) and answers its forwards
// with arbitrary bytes from `in` (a suffix chosen by position), some of them as failures.
inline void fly(fg::Flight& flight, fg::Shard& shard, const fg::ManualClock& clock, const char* in,
                size_t size, size_t begin) {
  for (auto& op : flight.batch->ops) {
    op.hash = fg::KeyTable::hash(op.key);
    if (op.shard == fg::kAllShards || op.shard == 0) shard.execute(op, clock.now_ns());
  }
  for (size_t i = 0; i < flight.forwards.size(); ++i) {
    const size_t from = (begin + i * 7) % (size + 1);
    flight.forwards[i].ok = (from & 3) != 0;
    flight.forwards[i].body.assign(in + from, size - from);
  }
}

}  // namespace fuzz
