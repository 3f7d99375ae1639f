// Policy names -> small ids.
#include "policy_ids.hpp"

namespace fg {

PolicyIds& PolicyIds::get() {
  static PolicyIds ids;
  return ids;
}

uint16_t PolicyIds::id_of(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  if (names_.size() >= kMaxPolicyIds) return 0;
  const auto id = static_cast<uint16_t>(names_.size());
  names_.push_back(name);
  ids_.emplace(name, id);
  return id;
}

std::vector<std::string> PolicyIds::names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_;
}

}  // namespace fg
