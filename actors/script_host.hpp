// Scripts (EVAL and its kin) run on shards, atomically with the keys they touch, but the
// engine that runs them lives above the shards (api/script): a shard hands a script op to
// the host it was given, with the shards the script may touch.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "shard_op.hpp"

namespace fg {

// Whose rights an op runs with: asked before each command a script calls (redis.call runs
// with the caller's rights, as in Redis), and for each lease a holder-wide renewal or
// release would touch. Null when nothing is checked.
class ScriptCaller {
 public:
  virtual ~ScriptCaller() = default;
  // Null when `words` may run; otherwise the error the call raises.
  virtual const char* refuse(const std::vector<std::string_view>& words) const = 0;
  // Whether the caller may change `key` (FG.HEARTBEAT and FG.RELEASEALL skip the rest).
  virtual bool may_write(std::string_view key) const = 0;
  // Its name, for what it owns (the scripts it loads into the cache).
  virtual std::string_view caller_name() const = 0;
};

class ScriptHost {
 public:
  virtual ~ScriptHost() = default;
  // Runs script op `op` (DataCmd::kEval) at `now_ns`. Every shard of `step` is held by
  // this thread for the whole run (parked in a step, or the only one); the answer goes
  // to op.reply.
  virtual void run(ShardOp& op, const Step& step, int64_t now_ns) = 0;
};

}  // namespace fg
