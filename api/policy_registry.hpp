// Named limiter policies ("free", "ws_messages", ...), read on the request path without
// locks: readers take a snapshot; a change publishes a whole new set.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "limit_spec.hpp"

namespace fg {

using PolicyMap = std::map<std::string, LimitSpec, std::less<>>;

class PolicyRegistry {
 public:
  std::shared_ptr<const PolicyMap> snapshot() const { return std::atomic_load(&map_); }
  void replace(PolicyMap m) {
    std::atomic_store(&map_,
                      std::shared_ptr<const PolicyMap>(std::make_shared<PolicyMap>(std::move(m))));
  }

 private:
  std::shared_ptr<const PolicyMap> map_ = std::make_shared<PolicyMap>();
};

}  // namespace fg
