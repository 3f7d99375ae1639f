// Topology, owners, reachability.
#include "topology_cache.hpp"

namespace floodgate {

bool TopologyCache::adopt(const pb::Topology& t, const std::string& from) {
  if (t.cluster() && known_ && topo_.cluster && t.epoch() < topo_.epoch) return false;
  Topology nt;
  nt.cluster = t.cluster();
  nt.epoch = t.epoch();
  nt.quorum = t.quorum();
  for (const auto& n : t.nodes()) {
    nt.nodes.push_back({n.id(), n.host(), static_cast<int>(n.port()),
                        static_cast<int>(n.resp_port()), n.state(), n.in_table()});
  }
  for (const auto& r : t.ranges()) {
    TopologyRange tr{
        static_cast<int>(r.first()), static_cast<int>(r.last()), static_cast<int>(r.owner()), {}};
    for (auto x : r.replicas()) tr.replicas.push_back(static_cast<int>(x));
    nt.ranges.push_back(std::move(tr));
  }
  topo_ = std::move(nt);
  known_ = true;
  owner_.assign(fg::kSlotCount, -1);
  ids_.clear();
  addrs_.clear();
  live_.clear();
  if (!topo_.cluster) {  // one node serves every slot, at the address that answered
    standalone_addr_ = from;
    addrs_.push_back(from);
    ids_.emplace_back();
    live_.push_back(true);
    return true;
  }
  for (const auto& n : topo_.nodes) {
    ids_.push_back(n.id);
    addrs_.push_back(n.port > 0 ? n.host + ":" + std::to_string(n.port) : std::string());
    live_.push_back(n.port > 0 && n.state != "dead" && n.state != "left");
  }
  for (const auto& r : topo_.ranges)
    for (int s = r.first; s <= r.last && s < static_cast<int>(fg::kSlotCount); ++s)
      owner_[static_cast<size_t>(s)] = r.owner;
  return true;
}

void TopologyCache::moved(uint32_t slot, std::string_view node_id) {
  if (slot >= fg::kSlotCount) return;
  for (size_t i = 0; i < ids_.size(); ++i)
    if (ids_[i] == node_id) owner_[slot] = static_cast<int>(i);
}

std::vector<std::string> TopologyCache::members() const {
  if (!topo_.cluster) return {standalone_addr_};
  std::vector<std::string> out;
  for (const auto& n : topo_.nodes) {
    if (n.in_table && (n.state == "alive" || n.state == "suspect") && n.port > 0) {
      out.push_back(n.host + ":" + std::to_string(n.port));
    }
  }
  return out;
}

void TopologyCache::mark_down(const std::string& addr, Clock::time_point now) {
  Down& d = down_[addr];
  d.backoff = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(1000), std::max(d.backoff * 2, std::chrono::milliseconds(100)));
  d.until = now + d.backoff;
}

bool TopologyCache::down(const std::string& addr, Clock::time_point now) const {
  auto it = down_.find(addr);
  return it != down_.end() && it->second.until > now;
}

bool TopologyCache::reachable(size_t node, Clock::time_point now) const {
  if (node >= live_.size() || !live_[node]) return false;
  return down_.empty() || !down(addrs_[node], now);  // (the common case: nothing is down)
}

std::string TopologyCache::relay(Clock::time_point now) {
  const std::vector<std::string> m = members();
  for (size_t k = 0; k < m.size(); ++k) {
    const std::string& a = m[(relay_rr_ + k) % m.size()];
    if (!down(a, now)) {
      relay_rr_ += k + 1;
      return a;
    }
  }
  return {};
}

}  // namespace floodgate
