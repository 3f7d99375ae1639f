// libFuzzer target: any bytes through a whole RESP session — parser, every command
// handler, the shard logic (run in place, without actors) and the reply encoder. Must
// never crash, leak, hang or produce a reply stream that is not valid RESP framing.
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "session.hpp"
#include "shard.hpp"

namespace {

struct World {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  fg::ManualClock clock;
  fg::PolicyRegistry policies;
  fg::ClientRegistry clients{1000};
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
    svc.settings.parser.max_bulk_len = 4096;
    svc.settings.parser.max_args = 64;
  }
};

World& world() {
  static World* w = new World();
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  fg::Shard shard(1000, 7);
  fg::Session session(w.svc, w.clients.add("fuzz", "fuzz", 0));
  fg::Batch batch;
  const char* in = reinterpret_cast<const char*>(data);
  size_t begin = 0;
  for (int rounds = 0; rounds < 10000 && begin < size; ++rounds) {
    batch.ops.clear();
    fg::ProcessResult r = session.process(in + begin, size - begin, batch);
    if (r.submitted) {
      for (auto& op : batch.ops) {
        op.hash = fg::KeyTable::hash(op.key);
        if (op.shard == fg::kAllShards || op.shard == 0) shard.execute(op, w.clock.now_ns());
      }
      session.complete(batch);
    }
    w.clock.advance_ms(7);
    begin += r.consumed;
    if (r.close || r.consumed == 0) break;
  }
  // Every reply must start with a RESP type byte.
  const std::string& out = session.output();
  if (!out.empty() && std::string("+-:$*%_~#,=(!|>").find(out[0]) == std::string::npos)
    __builtin_trap();
  w.clients.remove(session.client().id);
  return 0;
}
