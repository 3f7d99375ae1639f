// Scripts (EVAL and its kin) run on shards, atomically with the keys they touch, but the
// engine that runs them lives above the shards (api/script): a shard hands a script op to
// the host it was given, with the shards the script may touch.
#pragma once
#include <cstdint>

#include "shard_op.hpp"

namespace fg {

class ScriptHost {
 public:
  virtual ~ScriptHost() = default;
  // Runs script op `op` (DataCmd::kEval) at `now_ns`. Every shard of `step` is held by
  // this thread for the whole run (parked in a step, or the only one); the answer goes
  // to op.reply.
  virtual void run(ShardOp& op, const Step& step, int64_t now_ns) = 0;
};

}  // namespace fg
