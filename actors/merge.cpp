// Merging two copies of a key's state (merge.hpp has the rules).
#include "merge.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_set>

#include "limit_spec.hpp"
#include "words.hpp"

namespace fg {
namespace {

// Both integers (as Redis parses them): the larger text; else `mine`.
bool merge_value(std::string& mine, const std::string& theirs) {
  int64_t a = 0;
  int64_t b = 0;
  if (mine.size() <= 20 && theirs.size() <= 20 && parse_int(mine, a) && parse_int(theirs, b) &&
      b > a) {
    mine = theirs;
    return true;
  }
  return false;
}

bool merge_deadline(int64_t& mine, int64_t theirs) {
  if (theirs > 0 && (mine <= 0 || theirs > mine)) {
    mine = theirs;
    return true;
  }
  return false;
}

bool merge_log(EntrySnapshot& into, const EntrySnapshot& from) {
  // Both oldest first: a sorted merge, an entry in both (same instant and cost) taken once.
  std::vector<std::pair<int64_t, int64_t>> out;
  out.reserve(into.log.size() + from.log.size());
  size_t i = 0;
  size_t j = 0;
  bool changed = false;
  while (i < into.log.size() || j < from.log.size()) {
    if (j == from.log.size() || (i < into.log.size() && into.log[i] < from.log[j])) {
      out.push_back(into.log[i++]);
    } else if (i == into.log.size() || from.log[j] < into.log[i]) {
      out.push_back(from.log[j++]);
      changed = true;
    } else {
      out.push_back(into.log[i++]);
      ++j;
    }
  }
  if (out.size() > static_cast<size_t>(kMaxLogLimit)) {  // (the newest are the ones that count)
    out.erase(out.begin(), out.end() - kMaxLogLimit);
  }
  if (changed) into.log = std::move(out);
  return changed;
}

bool merge_leases(EntrySnapshot& into, const EntrySnapshot& from) {
  bool changed = false;
  for (const Lease& l : from.leases) {
    auto it = std::find_if(into.leases.begin(), into.leases.end(),
                           [&](const Lease& m) { return m.id == l.id; });
    if (it == into.leases.end()) {
      if (into.leases.size() >= static_cast<size_t>(kMaxLeaseLimit)) break;
      into.leases.push_back(l);
      changed = true;
    } else if (l.expires_at_ns > it->expires_at_ns) {
      it->expires_at_ns = l.expires_at_ns;
      changed = true;
    }
  }
  return changed;
}

bool merge_hash(EntrySnapshot& into, const EntrySnapshot& from) {
  bool changed = false;
  for (const auto& [f, v] : from.hash) {
    const auto& field = f;  // (clang 14 cannot capture a structured binding)
    auto it = std::find_if(into.hash.begin(), into.hash.end(),
                           [&field](const auto& kv) { return kv.first == field; });
    if (it == into.hash.end()) {
      into.hash.emplace_back(f, v);
      changed = true;
    } else {
      changed |= merge_value(it->second, v);
    }
  }
  return changed;
}

bool merge_zset(EntrySnapshot& into, const EntrySnapshot& from) {
  std::map<std::string, double> by_member;
  for (const auto& [m, s] : into.zset) by_member.emplace(m, s);
  bool changed = false;
  for (const auto& [m, s] : from.zset) {
    auto [it, fresh] = by_member.emplace(m, s);
    if (fresh || s > it->second) {
      it->second = s;
      changed = true;
    }
  }
  if (!changed) return false;
  into.zset.assign(by_member.begin(), by_member.end());
  std::stable_sort(into.zset.begin(), into.zset.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  return true;
}

// Sets take the union: a member added on either side of a partition stays (one removed on
// one side only comes back, the price of never losing an add).
bool merge_set(EntrySnapshot& into, const EntrySnapshot& from) {
  std::unordered_set<std::string_view> have(into.list.begin(), into.list.end());
  std::vector<std::string> fresh;
  for (const std::string& m : from.list)
    if (!have.count(m)) fresh.push_back(m);
  if (fresh.empty()) return false;
  for (std::string& m : fresh) into.list.push_back(std::move(m));
  return true;
}

}  // namespace

bool merge_snapshot(EntrySnapshot& into, const EntrySnapshot& from) {
  if (into.kind == Kind::kNone) {
    into = from;
    return true;
  }
  if (from.kind != into.kind || from.fields.size() != snapshot_field_count(from.kind) ||
      into.fields.size() != snapshot_field_count(into.kind)) {
    return false;  // another kind (or a malformed copy): the serving copy decides
  }
  bool changed = false;
  auto later = [&](int64_t& mine, int64_t theirs) {
    if (theirs > mine) {
      mine = theirs;
      changed = true;
    }
  };
  switch (into.kind) {
    case Kind::kTokenBucket:
    case Kind::kGcra:
      later(into.fields[0], from.fields[0]);
      break;
    case Kind::kFixedWindow:  // {window_end_ns, count}
    case Kind::kCalendarWindow:
      if (from.fields[0] > into.fields[0]) {
        into.fields = from.fields;
        changed = true;
      } else if (from.fields[0] == into.fields[0]) {
        later(into.fields[1], from.fields[1]);
      }
      break;
    case Kind::kSlidingWindow: {  // {start_ns, window_ns, curr, prev}
      auto& a = into.fields;
      const auto& b = from.fields;
      if (a[1] != b[1]) break;  // windows of another length: the serving copy decides
      if (b[0] == a[0]) {
        later(a[2], b[2]);
        later(a[3], b[3]);
      } else if (b[0] > a[0]) {
        const int64_t mine_start = a[0];
        const int64_t mine_curr = a[2];
        a = b;
        // Our current window is their previous one: it keeps the larger count of it.
        if (b[0] - b[1] == mine_start && mine_curr > a[3]) a[3] = mine_curr;
        changed = true;
      } else if (a[0] - a[1] == b[0]) {
        later(a[3], b[2]);  // theirs is one window behind: its current is our previous
      }
      break;
    }
    case Kind::kSlidingLog:
      changed |= merge_log(into, from);
      break;
    case Kind::kConcurrency:
      changed |= merge_leases(into, from);
      break;
    case Kind::kString:
      changed |= merge_value(into.value, from.value);
      break;
    case Kind::kHash:
      changed |= merge_hash(into, from);
      break;
    case Kind::kZSet:
      changed |= merge_zset(into, from);
      break;
    case Kind::kSet:
      changed |= merge_set(into, from);
      break;
    case Kind::kList:
    case Kind::kNone:
      break;
  }
  changed |= merge_deadline(into.expires_ms, from.expires_ms);
  return changed;
}

}  // namespace fg
