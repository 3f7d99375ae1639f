// The Redis Cluster face: CLUSTER SLOTS/SHARDS/NODES/INFO/KEYSLOT/MYID, ASKING, READONLY.
// Read from the routing snapshot the session already holds for this read.
#include <cctype>
#include <string>

#include "command_context.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "key_slot.hpp"
#include "words.hpp"

namespace fg {

namespace {

const char* health(MemberState st) {
  return st == MemberState::kAlive || st == MemberState::kSuspect ? "online" : "fail";
}

std::string node_flags(const RouteNode& n) {
  std::string f = n.self ? "myself,master" : "master";
  if (n.state == MemberState::kSuspect) f += ",fail?";
  if (n.state == MemberState::kDead || n.state == MemberState::kLeft) f += ",fail";
  return f;
}

int peer_port(const RouteNode& n) {
  const auto colon = n.peer_addr.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(n.peer_addr.c_str() + colon + 1);
}

void slots_reply(CommandContext& s, const Routing& rt) {
  size_t n = 0;
  for (const SlotRange& r : rt.ranges) n += r.owner != kNoOwner;
  RespWriter w = s.local();
  w.array(n);
  size_t members = 0;
  for (const RouteNode& node : rt.nodes) members += node.in_table;
  const size_t copies = std::min(rt.replicas, members);
  for (const SlotRange& r : rt.ranges) {
    if (r.owner == kNoOwner) continue;
    // The owner, then the nodes keeping a copy of the range's state (they answer its
    // keys with -MOVED: replicas are for failover, not for reads).
    w.array(2 + std::max<size_t>(copies, 1));
    w.integer(r.first);
    w.integer(r.last);
    for (size_t k = 0; k < std::max<size_t>(copies, 1); ++k) {
      const RouteNode& node = rt.nodes[(r.owner + k) % std::max<size_t>(members, 1)];
      w.array(4);
      w.bulk(node.resp_host);
      w.integer(node.resp_port);
      w.bulk(node.id);
      w.map(0);
    }
  }
}

void shards_reply(CommandContext& s, const Routing& rt) {
  size_t n = 0;
  for (const RouteNode& node : rt.nodes) n += node.in_table;
  RespWriter w = s.local();
  w.array(n);
  for (size_t i = 0; i < rt.nodes.size(); ++i) {
    const RouteNode& node = rt.nodes[i];
    if (!node.in_table) continue;
    std::vector<const SlotRange*> mine;
    for (const SlotRange& r : rt.ranges)
      if (r.owner == i) mine.push_back(&r);
    w.map(2);
    w.bulk("slots");
    w.array(mine.size() * 2);
    for (const SlotRange* r : mine) {
      w.integer(r->first);
      w.integer(r->last);
    }
    w.bulk("nodes");
    w.array(1);
    w.map(7);
    w.bulk("id");
    w.bulk(node.id);
    w.bulk("port");
    w.integer(node.resp_port);
    w.bulk("ip");
    w.bulk(node.resp_host);
    w.bulk("endpoint");
    w.bulk(node.resp_host);
    w.bulk("role");
    w.bulk("master");
    w.bulk("replication-offset");
    w.integer(0);
    w.bulk("health");
    w.bulk(health(node.state));
  }
}

std::string nodes_text(const Routing& rt) {
  std::string out;
  for (size_t i = 0; i < rt.nodes.size(); ++i) {
    const RouteNode& n = rt.nodes[i];
    out += n.id + " " + n.resp_host + ":" + std::to_string(n.resp_port) + "@" +
           std::to_string(peer_port(n)) + " " + node_flags(n) + " - 0 0 " +
           std::to_string(rt.epoch) + " " +
           (n.state == MemberState::kAlive || n.self ? "connected" : "disconnected");
    for (const SlotRange& r : rt.ranges) {
      if (r.owner != i) continue;
      out += " " + std::to_string(r.first);
      if (r.last != r.first) out += "-" + std::to_string(r.last);
    }
    out += "\n";
  }
  return out;
}

std::string info_text(const Routing& rt) {
  size_t ok = 0, pfail = 0, fail = 0, assigned = 0, size = 0;
  for (const RouteNode& n : rt.nodes) size += n.in_table;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    const uint16_t o = rt.owner[s];
    if (o == kNoOwner) continue;
    ++assigned;
    const MemberState st = rt.nodes[o].self ? MemberState::kAlive : rt.nodes[o].state;
    if (st == MemberState::kAlive) {
      ++ok;
    } else if (st == MemberState::kSuspect) {
      ++pfail;
    } else {
      ++fail;
    }
  }
  const bool good = rt.epoch > 0 && assigned == kSlotCount && fail == 0;
  auto kv = [](std::string& o, const char* k, uint64_t v) {
    o += k;
    o += ':';
    o += std::to_string(v);
    o += "\r\n";
  };
  std::string out = std::string("cluster_state:") + (good ? "ok" : "fail") + "\r\n";
  kv(out, "cluster_slots_assigned", assigned);
  kv(out, "cluster_slots_ok", ok);
  kv(out, "cluster_slots_pfail", pfail);
  kv(out, "cluster_slots_fail", fail);
  kv(out, "cluster_known_nodes", rt.nodes.size());
  kv(out, "cluster_size", size);
  kv(out, "cluster_current_epoch", rt.epoch);
  kv(out, "cluster_my_epoch", rt.epoch);
  kv(out, "cluster_slots_served_here", rt.serving.count());
  kv(out, "cluster_slots_awaited_here", rt.awaiting.count());
  return out;
}

constexpr const char* kHelp[] = {
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "SHARDS",
    "    Return information about slot range mappings and the nodes serving them.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "HELP",
    "    Print this help.",
};

}  // namespace

void cmd_cluster(CommandContext& s, Args& a) {
  const std::string_view sub = a[1];
  if (iequals(sub, "help")) {
    s.local().help(kHelp);
    return;
  }
  if (!s.svc().routing) return s.local().error(err::kClusterDisabled);
  const Routing& rt = *s.routing();
  auto arity = [&](size_t n) {
    if (a.size() == n) return true;
    std::string name(sub.substr(0, 32));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s.local().error(err::wrong_arity("cluster|" + name));
    return false;
  };
  if (iequals(sub, "slots")) {
    if (!arity(2)) return;
    s.set_cluster_aware();
    slots_reply(s, rt);
  } else if (iequals(sub, "shards")) {
    if (!arity(2)) return;
    s.set_cluster_aware();
    shards_reply(s, rt);
  } else if (iequals(sub, "nodes")) {
    // Not a sign of a cluster client: people type it at redis-cli, whose next command
    // should still be answered, not redirected. Client libraries discover the cluster
    // through SLOTS or SHARDS.
    if (!arity(2)) return;
    s.local().bulk(nodes_text(rt));
  } else if (iequals(sub, "info")) {
    if (!arity(2)) return;
    s.local().bulk(info_text(rt));
  } else if (iequals(sub, "keyslot")) {
    if (!arity(3)) return;
    s.local().integer(key_slot(a[2]));
  } else if (iequals(sub, "myid") || iequals(sub, "myshardid")) {
    if (!arity(2)) return;
    s.local().bulk(rt.self().id);
  } else {
    s.local().error(err::unknown_subcommand(sub, "CLUSTER HELP"));
  }
}

// Accepted for cluster clients' sake. Floodgate never answers -ASK (a slot's state moves
// in one step, and requests for it wait meanwhile), so ASKING has nothing to enable;
// every node serves reads and writes alike, so READONLY/READWRITE change nothing.
void cmd_asking(CommandContext& s, Args&) {
  if (!s.svc().routing) return s.local().error(err::kClusterDisabled);
  s.local().ok();
}

}  // namespace fg
