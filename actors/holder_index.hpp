// Which keys of a shard hold leases of which holder, so a heartbeat touches only those.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fg {

class HolderIndex {
 public:
  void add(std::string_view holder, std::string_view key);
  void remove(std::string_view holder, std::string_view key, uint32_t n = 1);
  void remove_key(std::string_view key, const std::vector<std::string>& holders);
  std::vector<std::string> keys_of(std::string_view holder) const;
  size_t holders() const { return map_.size(); }

 private:
  std::unordered_map<std::string, std::unordered_map<std::string, uint32_t>> map_;
};

}  // namespace fg
