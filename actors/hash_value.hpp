// A hash key's fields, in the order they were first set (as a small Redis hash keeps them:
// HGETALL lists them so). A hash holds at most kMaxHashFields fields.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fg {

constexpr size_t kMaxHashFields = 10'000;

struct HashValue {
  std::vector<std::pair<std::string, std::string>> fields;  // (changed through the functions)
  size_t bytes = 0;  // what its fields hold, for the key's charge (accounts.hpp)
  static constexpr size_t kFieldBytes = 64;  // a field's two strings, besides their bytes

  std::string* find(std::string_view f) {
    for (auto& [k, v] : fields)
      if (k == f) return &v;
    return nullptr;
  }
  // Sets `f`; true if it is a new field.
  bool set(std::string_view f, std::string_view v) {
    if (std::string* cur = find(f)) {
      bytes = bytes - cur->size() + v.size();
      cur->assign(v.data(), v.size());
      return false;
    }
    fields.emplace_back(std::string(f), std::string(v));
    bytes += f.size() + v.size() + kFieldBytes;
    return true;
  }
  bool erase(std::string_view f) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      if (it->first == f) {
        bytes -= it->first.size() + it->second.size() + kFieldBytes;
        fields.erase(it);
        return true;
      }
    }
    return false;
  }
  // After `fields` was set whole.
  void recount() {
    bytes = 0;
    for (const auto& [f, v] : fields) bytes += f.size() + v.size() + kFieldBytes;
  }
};

}  // namespace fg
