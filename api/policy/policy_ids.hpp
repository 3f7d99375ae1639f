// Stable small ids for policy names, so a decision carries its policy in LimitSpec::policy at
// no cost (metrics count decisions per policy by id).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fg {

inline constexpr size_t kMaxPolicyIds = 1024;  // beyond: counted under id 0 ("other")

// Never reused while the process lives. Process-wide.
class PolicyIds {
 public:
  static PolicyIds& get();
  uint16_t id_of(const std::string& name);  // 0 when out of ids
  std::vector<std::string> names() const;   // index = id; [0] = ""

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint16_t> ids_;
  std::vector<std::string> names_ = {""};
};

}  // namespace fg
