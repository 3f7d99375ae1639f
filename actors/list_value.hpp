// A list's elements, head first. At most kMaxListElements.
#pragma once
#include <deque>
#include <string>

namespace fg {

constexpr size_t kMaxListElements = 100'000;

struct ListValue {
  std::deque<std::string> items;
};

}  // namespace fg
