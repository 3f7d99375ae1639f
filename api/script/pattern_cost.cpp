// Walks a Lua 5.1 pattern item by item, as lstrlib's matcher reads it, and multiplies the
// choices each item leaves to backtracking. A malformed pattern is costed as far as it
// reads; the matcher itself then raises Lua's error for it.
#include "pattern_cost.hpp"

#include <algorithm>
#include <vector>

namespace fg {

namespace {

enum class Item { kFixed, kVariable, kOptional, kScan };

// Where the single-character class starting at `i` ends (lstrlib's classEnd), or npos.
size_t class_end(std::string_view p, size_t i) {
  if (i >= p.size()) return std::string_view::npos;
  if (p[i] == '%') return i + 2 <= p.size() ? i + 2 : std::string_view::npos;
  if (p[i] != '[') return i + 1;
  ++i;
  if (i < p.size() && p[i] == '^') ++i;
  do {  // (the first character of a set is taken before looking for ']': "[]]" is a set)
    if (i >= p.size()) return std::string_view::npos;
    const char c = p[i++];
    if (c == '%' && i < p.size()) ++i;
  } while (i >= p.size() || p[i] != ']');
  return i + 1;
}

}  // namespace

double pattern_steps(std::string_view p, size_t n, PatternUse use) {
  size_t i = 0;
  bool anchored = false;
  if (use == PatternUse::kAnchorable && !p.empty() && p[0] == '^') {
    anchored = true;
    i = 1;
  }
  std::vector<Item> items;
  bool end_anchor = false;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '(' || c == ')') {
      ++i;
      continue;
    }
    if (c == '$' && i + 1 == p.size()) {
      end_anchor = true;
      break;
    }
    if (c == '%' && i + 1 < p.size()) {
      const char k = p[i + 1];
      if (k == 'b') {
        items.push_back(Item::kScan);
        i += 4;
        continue;
      }
      if (k == 'f') {
        const size_t e = class_end(p, i + 2);
        if (e == std::string_view::npos) break;
        items.push_back(Item::kFixed);
        i = e;
        continue;
      }
      if (k >= '0' && k <= '9') {
        items.push_back(Item::kScan);
        i += 2;
        continue;
      }
    }
    const size_t e = class_end(p, i);
    if (e == std::string_view::npos) break;
    Item item = Item::kFixed;
    i = e;
    if (i < p.size()) {
      const char q = p[i];
      if (q == '*' || q == '+' || q == '-') {
        item = Item::kVariable;
        ++i;
      } else if (q == '?') {
        item = Item::kOptional;
        ++i;
      }
    }
    items.push_back(item);
  }
  const double lengths = static_cast<double>(n) + 1;
  double steps = anchored ? 1 : lengths;
  steps *= static_cast<double>(std::max<size_t>(1, items.size()));
  for (size_t j = 0; j < items.size(); ++j) {
    const bool last = j + 1 == items.size() && !end_anchor;
    switch (items[j]) {
      case Item::kVariable:
        if (!last) steps *= lengths;
        break;
      case Item::kOptional:
        if (!last) steps *= 2;
        break;
      case Item::kScan:
        steps *= lengths;
        break;
      case Item::kFixed:
        break;
    }
    if (steps > 1e300) return 1e300;
  }
  return steps;
}

}  // namespace fg
