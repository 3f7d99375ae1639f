// Holder -> key -> lease count bookkeeping.
#include "holder_index.hpp"

namespace fg {

void HolderIndex::add(std::string_view holder, std::string_view key) {
  if (holder.empty()) return;
  ++map_[std::string(holder)][std::string(key)];
}

void HolderIndex::remove(std::string_view holder, std::string_view key, uint32_t n) {
  if (holder.empty()) return;
  auto h = map_.find(std::string(holder));
  if (h == map_.end()) return;
  auto k = h->second.find(std::string(key));
  if (k == h->second.end()) return;
  if (k->second <= n) {
    h->second.erase(k);
    if (h->second.empty()) map_.erase(h);
  } else {
    k->second -= n;
  }
}

void HolderIndex::remove_key(std::string_view key, const std::vector<std::string>& holders) {
  for (const auto& h : holders) remove(h, key, 1);
}

std::vector<std::string> HolderIndex::keys_of(std::string_view holder) const {
  std::vector<std::string> out;
  auto h = map_.find(std::string(holder));
  if (h == map_.end()) return out;
  for (const auto& [k, n] : h->second) out.push_back(k);
  return out;
}

}  // namespace fg
