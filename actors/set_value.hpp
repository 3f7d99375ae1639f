// A set: distinct members, each found in O(1) and any one picked at random in O(1) (SPOP,
// SRANDMEMBER): a hash index of the members and a dense array of them that a removal fills
// by moving the last one into the gap. At most kMaxSetMembers members.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "words.hpp"

namespace fg {

constexpr size_t kMaxSetMembers = 100'000;

struct SetValue {
  // The array points at the index's keys (a node-based map: they stay put).
  std::unordered_map<std::string, uint32_t> index;  // member -> its place in `members`
  std::vector<const std::string*> members;
  // Once a member is not an integer, or the set outgrew set-max-intset-entries, redis-server
  // holds it as a hash table for good; OBJECT ENCODING reports it so, and SMEMBERS lists an
  // integer set in ascending order as an intset does.
  bool hashtable = false;
  size_t bytes = 0;  // what its members hold, for the key's charge (accounts.hpp)
  static constexpr size_t kMemberBytes = 80;  // a member's node, slot and string, besides bytes

  size_t size() const { return members.size(); }
  bool contains(std::string_view m) const { return index.count(std::string(m)) != 0; }
  // Adds `m`; true if it is new. `intset_max`: set-max-intset-entries.
  bool add(std::string_view m, int64_t intset_max) {
    auto [it, fresh] = index.emplace(std::string(m), static_cast<uint32_t>(members.size()));
    if (!fresh) return false;
    members.push_back(&it->first);
    bytes += m.size() + kMemberBytes;
    int64_t v;
    if (!hashtable && (!parse_int(m, v) || static_cast<int64_t>(members.size()) > intset_max))
      hashtable = true;
    return true;
  }
  bool erase(std::string_view m) {
    auto it = index.find(std::string(m));
    if (it == index.end()) return false;
    erase_at(it->second);
    return true;
  }
  // Removes the member at place `i` of `members`.
  void erase_at(uint32_t i) {
    auto gone = index.find(*members[i]);
    bytes -= gone->first.size() + kMemberBytes;
    const std::string* last = members.back();
    members[i] = last;
    index.find(*last)->second = i;
    members.pop_back();
    index.erase(gone);
  }
};

// set-max-intset-entries (CONFIG SET), and a set's members as redis-server lists them: an
// intset's in ascending order, a table's as held (data_set.cpp).
int64_t set_intset_max();
std::vector<const std::string*> set_members_in_order(const SetValue& s);

}  // namespace fg
