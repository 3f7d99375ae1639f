// A sorted set: members ordered by (score, member bytes), as Redis orders them, with each
// member's score at hand. At most kMaxZSetMembers members.
#pragma once
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace fg {

constexpr size_t kMaxZSetMembers = 100'000;

struct ZSetValue {
  std::set<std::pair<double, std::string>> by_score;
  std::unordered_map<std::string, double> scores;
  size_t bytes = 0;  // what its members hold, for the key's charge (accounts.hpp)
  static constexpr size_t kMemberBytes = 128;  // a member's nodes in both indexes

  size_t size() const { return scores.size(); }
  const double* score(std::string_view m) const {
    auto it = scores.find(std::string(m));
    return it == scores.end() ? nullptr : &it->second;
  }
  void set(std::string_view m, double s) {
    s += 0.0;  // -0 is kept as 0 (as a small Redis sorted set does: its scores are text)
    auto [it, fresh] = scores.emplace(std::string(m), s);
    if (!fresh) {
      by_score.erase({it->second, it->first});
      it->second = s;
    } else {
      bytes += 2 * m.size() + kMemberBytes;
    }
    by_score.emplace(s, it->first);
  }
  bool erase(std::string_view m) {
    auto it = scores.find(std::string(m));
    if (it == scores.end()) return false;
    by_score.erase({it->second, it->first});
    bytes -= 2 * it->first.size() + kMemberBytes;
    scores.erase(it);
    return true;
  }
};

}  // namespace fg
