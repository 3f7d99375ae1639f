// Leases taken with BOUND belong to the connection (RESP or native) that took them: each
// connection gets holder names of its own (one per lease TTL), which this node renews while
// the connection lives and releases when it closes (lease_upkeep.hpp). If the node dies,
// nobody renews them and they expire within their TTL.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fg {

class BoundLeases {
 public:
  // `tag` is unique to this node process (its run id): a restarted node never renews
  // the holders of its previous life.
  explicit BoundLeases(std::string tag) : tag_(std::move(tag)) {}

  // The holder name for connection `client`'s leases of `ttl_ms`.
  std::string bind(uint64_t client, int64_t ttl_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& h = clients_[client][ttl_ms];
    if (h.holder.empty()) {
      h.holder = "bound:" + tag_ + ":" + std::to_string(client) + ":" + std::to_string(ttl_ms);
    }
    return h.holder;
  }
  // The connection closed: its holder names, to release.
  std::vector<std::string> unbind(uint64_t client) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    auto it = clients_.find(client);
    if (it == clients_.end()) return out;
    for (const auto& [ttl, h] : it->second) out.push_back(h.holder);
    clients_.erase(it);
    return out;
  }
  // Holders due for renewal at `now_ms` (a third of their TTL since the last), as
  // (holder, ttl_ms); marks them renewed.
  std::vector<std::pair<std::string, int64_t>> due(int64_t now_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<std::string, int64_t>> out;
    for (auto& [client, by_ttl] : clients_) {
      for (auto& [ttl, h] : by_ttl) {
        if (h.renewed_ms == 0) h.renewed_ms = now_ms;  // just taken: fresh
        if (now_ms - h.renewed_ms >= ttl / 3) {
          h.renewed_ms = now_ms;
          out.emplace_back(h.holder, ttl);
        }
      }
    }
    return out;
  }

 private:
  struct Holder {
    std::string holder;
    int64_t renewed_ms = 0;
  };
  std::string tag_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::map<int64_t, Holder>> clients_;
};

}  // namespace fg
