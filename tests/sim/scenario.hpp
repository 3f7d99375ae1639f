// One seed's run: a cluster formed, client load through every node, faults drawn from the
// seed, the bounds checked, one verdict line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg::sim {

enum class Fault {
  kKill,
  kPause,
  kPartition,
  kMinority,
  kOneWay,
  kLoss,
  kDelay,
  kClock,
  kJoin,
  kLeave,
  kRestart,
  // Not among the defaults (seeds found before them replay exactly): --faults disk,...
  kDisk,
  kRolling,  // every node in turn: a graceful stop, back with its disk (a Kubernetes rollout)
  kBounce,   // the owner killed and started again at once, before anyone declares it dead
  kReboot,   // every node killed at once (a power cut), all started again from their disks
  // Two faults at once: the second 50-1500 ms after the first, inside its detection or
  // hand-off window (a deploy during an incident). `overlap` draws one of the pairs below that
  // the cluster's size and copies allow (among the defaults); each can be named alone.
  kOverlap,
  kKillLeave,       // the hot slot's owner or its replica killed, the other leaves
  kKillJoin,        // the owner killed, a new node joins
  kLeaveLeave,      // the owner and its replica leave
  kKillKill,        // the owner and its replica killed (three copies: --replicas 3)
  kPartitionLeave,  // the owner cut off from the rest, a node of the rest leaves
  kRestartKill      // the owner's process killed (back with its disk), then another node killed
};

// The client load: kBasic is the first one (the hot sliding log, two counters, a holder's
// leases), kept so seeds found on it replay exactly; kFull adds every other limiter kind,
// reservations, data commands (INCR and EXPIRE, MULTI/EXEC) and leases without holders and
// BOUND to a connection.
// kDoors is kFull plus clients that speak RESP to a node over the in-memory pipe its
// connection shell serves (node/client_connection.hpp): MULTI/EXEC and EVAL, reconnecting
// when their node restarts (a load of its own, so seeds found on kFull replay exactly).
// kHot is kFull plus a hot key of each sliceable kind (a token bucket and a fixed window)
// taken through every node faster than the nodes' slice threshold: the nodes that do not own
// it admit from quota slices (api/core/hot_slices.hpp), and the checkers hold it to the
// bound stated for them (api/COMMANDS.md, Quota slices).
enum class Load { kBasic, kFull, kDoors, kHot };

struct Options {
  int nodes = 3;
  Load load = Load::kFull;
  int seconds = 20;           // of load (virtual), faults included
  int replicas = 2;           // copies of each slot the nodes keep (cluster-replicas)
  std::vector<Fault> faults;  // drawn from; empty: none
  bool verbose = false;       // the nodes' log, each line with its node and virtual time
  Options();                  // every fault kind up to kRestart, and overlap
};

struct Verdict {
  bool passed = true;
  std::string line;  // seed, figures, what failed
  uint64_t digest = 0;
  int64_t simulated_ns = 0;
};

Verdict run_seed(uint64_t seed, const Options& opt);
std::string fault_names();
bool parse_faults(const std::string& list, std::vector<Fault>& out, std::string& why);

}  // namespace fg::sim
