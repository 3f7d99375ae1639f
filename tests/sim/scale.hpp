// How the cluster's upkeep grows with its size: N real nodes in the simulator, a light load,
// and the figures that say where a Floodgate cluster stops (tests/sim/scale/REPORT.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg::sim {

struct ScaleRun {
  int nodes = 3;
  uint64_t seed = 1;
  int64_t keys = 20000;       // limiter keys made before the measurements, spread over slots
  int64_t load_per_s = 2000;  // requests per second through random nodes while loaded
  int rest_seconds = 10;      // virtual, at rest
  int load_seconds = 5;       // virtual, under load
};

struct ScaleFigures {
  int nodes = 0;
  uint64_t seed = 0;
  double form_s = -1;        // virtual: every node started at once -> one table everywhere
  double view_s = -1;        // ... and every node has heard of every other (holds it alive)
  double heap_per_node = 0;  // bytes of heap per node once formed (a whole node: shards too)
  double gossip_rest = 0, peer_rest = 0;  // bytes per node per second, at rest
  double gossip_load = 0, peer_load = 0;  // ... under load
  double cpu_rest_us = 0;                 // real CPU per simulated second per node, at rest
  double cpu_load_us = 0;                 // ... under load
  double detect_ms = -1;                  // a node killed -> every other node holds it dead
  double failover_ms = -1;                // ... -> every node serves the failover table
  double spread_ms = -1;                  // first node to adopt that table -> last one
  double join_ms = -1;                    // a node started -> every node serves the table with it
  double join_keys = 0, join_bytes = 0;   // state handed over for it (keys, hand-off bytes)
  double leave_ms = -1;  // a graceful leave begun -> every node serves the table without it
  double leave_keys = 0, leave_bytes = 0;
  double largest_datagram = 0;  // bytes: the largest gossip datagram any node sent
  double keys_lost = 0;         // keys the kill took with it (none: every slot has a replica)
  std::string error;            // what did not happen in time
};

ScaleFigures run_scale(const ScaleRun& run);
// One line per figure set; the header names the columns.
std::string scale_header();
std::string scale_line(const ScaleFigures& f);

}  // namespace fg::sim
