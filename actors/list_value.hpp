// A list's elements, head first. At most kMaxListElements. What its elements hold (`bytes`,
// for the key's charge: accounts.hpp) is kept by the functions that change them.
#pragma once
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

namespace fg {

constexpr size_t kMaxListElements = 100'000;

struct ListValue {
  using Items = std::deque<std::string>;
  Items items;  // (read freely; changed through the functions below)
  size_t bytes = 0;
  static constexpr size_t kItemBytes = 40;  // a string in a deque's block, besides its bytes

  void push_front(std::string_view v) {
    items.emplace_front(v);
    bytes += v.size() + kItemBytes;
  }
  void push_back(std::string_view v) {
    items.emplace_back(v);
    bytes += v.size() + kItemBytes;
  }
  std::string pop(bool front) {
    std::string v = std::move(front ? items.front() : items.back());
    front ? items.pop_front() : items.pop_back();
    bytes -= v.size() + kItemBytes;
    return v;
  }
  void set(size_t i, std::string_view v) {
    bytes = bytes - items[i].size() + v.size();
    items[i].assign(v.data(), v.size());
  }
  void insert(Items::iterator at, std::string_view v) {
    items.emplace(at, v);
    bytes += v.size() + kItemBytes;
  }
  Items::iterator erase(Items::iterator at) {
    bytes -= at->size() + kItemBytes;
    return items.erase(at);
  }
  // Keeps the elements [start, end] only.
  void keep(size_t start, size_t end) {
    for (size_t i = 0; i < items.size(); ++i)
      if (i < start || i > end) bytes -= items[i].size() + kItemBytes;
    items.erase(items.begin() + static_cast<std::ptrdiff_t>(end) + 1, items.end());
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(start));
  }
  // After `items` was filled or emptied whole.
  void recount() {
    bytes = 0;
    for (const std::string& v : items) bytes += v.size() + kItemBytes;
  }
};

}  // namespace fg
