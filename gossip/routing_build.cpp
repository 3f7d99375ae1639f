// Table + members + held slots -> the routing snapshot.
#include "routing_build.hpp"

#include <algorithm>
#include <cstdlib>

namespace fg {

namespace {
void split_addr(const std::string& addr, std::string& host, int& port) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    host = addr;
    port = 0;
    return;
  }
  host = addr.substr(0, colon);
  port = std::atoi(addr.c_str() + colon + 1);
}
}  // namespace

Routing build_routing(const RoutingInputs& in) {
  Routing r;
  const SlotTable& t = *in.table;
  const std::map<std::string, Member>& known = *in.known;
  r.epoch = t.epoch();
  auto node_of = [&](const std::string& id, bool in_table) {
    RouteNode n;
    n.id = id;
    n.in_table = in_table;
    n.self = id == in.self;
    auto it = known.find(id);
    if (it != known.end()) {
      split_addr(it->second.resp_addr, n.resp_host, n.resp_port);
      n.native_port = it->second.native_port;
      n.peer_addr = it->second.addr;
      n.state = it->second.state;
    } else {
      n.state = MemberState::kDead;
    }
    return n;
  };
  for (const auto& id : t.members()) r.nodes.push_back(node_of(id, true));
  for (const auto& [id, m] : known) {
    // (index_of: a binary search of the sorted members; a linear find made every publish
    // O(N²) — at 1,000 members, most of a node's upkeep while the cluster formed)
    if (t.index_of(id) < 0 && (m.live() || id == in.self)) {
      r.nodes.push_back(node_of(id, false));
    }
  }
  for (size_t i = 0; i < r.nodes.size(); ++i)
    if (r.nodes[i].self) r.self_index = static_cast<int>(i);
  for (uint32_t s = 0; s < kSlotCount; ++s) r.owner[s] = t.owner(s);
  if (t.epoch() > 0) r.ranges = t.ranges();
  r.awaiting = in.awaiting;
  r.lost = in.lost;
  r.quorum = !in.standing_down && (t.epoch() == 0 || t.members().size() < 2 || t.quorum(in.alive));
  r.pulse_ns = in.pulse_ns;
  r.replicas = t.replica_count();
  for (uint32_t s = 0; s < kSlotCount && r.quorum; ++s) {
    if (in.held.test(s) && static_cast<int>(r.owner[s]) == r.self_index) r.serving.set(s);
  }
  return r;
}

}  // namespace fg
