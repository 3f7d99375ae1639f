// Converting between in-table entries and snapshots.
#include "entry_snapshot.hpp"

#include "encoding_thresholds.hpp"
#include "fixed_window.hpp"
#include "gcra.hpp"
#include "hash_value.hpp"
#include "list_value.hpp"
#include "set_value.hpp"
#include "sliding_log.hpp"
#include "sliding_window.hpp"
#include "string_value.hpp"
#include "token_bucket.hpp"
#include "zset_value.hpp"

namespace fg {

size_t snapshot_field_count(Kind k) {
  switch (k) {
    case Kind::kTokenBucket:
      return 1;
    case Kind::kGcra:
      return 1;
    case Kind::kFixedWindow:
    case Kind::kCalendarWindow:
      return 2;
    case Kind::kSlidingWindow:
      return 4;
    case Kind::kSlidingLog:
      return 1;
    case Kind::kConcurrency:
    case Kind::kString:
    case Kind::kHash:
    case Kind::kZSet:
    case Kind::kList:
    case Kind::kSet:
      return 0;
    case Kind::kNone:
      break;
  }
  return 0;
}

EntrySnapshot snapshot_of(Entry& e) {
  EntrySnapshot s;
  s.key = std::string(e.key());
  s.kind = e.kind;
  s.expires_ms = e.deadline_ms();
  s.account = e.account();
  switch (e.kind) {
    case Kind::kTokenBucket:
      s.fields = {e.state<TokenBucketState>().full_at_ns};
      break;
    case Kind::kGcra:
      s.fields = {e.state<GcraState>().tat_ns};
      break;
    case Kind::kCalendarWindow:
    case Kind::kFixedWindow: {
      const auto& f = e.state<FixedWindowState>();
      s.fields = {f.window_end_ns, f.count};
      break;
    }
    case Kind::kSlidingWindow: {
      const auto& w = e.state<SlidingWindowState>();
      s.fields = {w.start_ns, w.window_ns, w.curr, w.prev};
      break;
    }
    case Kind::kSlidingLog: {
      const SlidingLogState& l = *e.state<SlidingLogState*>();
      s.fields = {l.window_ns};
      for (size_t i = l.head; i < l.entries.size(); ++i)
        s.log.emplace_back(l.entries[i].at_ns, l.entries[i].cost);
      break;
    }
    case Kind::kConcurrency:
      s.leases = e.state<LeaseSet*>()->leases();
      break;
    case Kind::kString: {
      std::string buf;
      s.value = std::string(string_get(e, buf));
      break;
    }
    case Kind::kHash:
      s.hash = e.state<HashValue*>()->fields;
      break;
    case Kind::kZSet:
      for (const auto& [score, m] : e.state<ZSetValue*>()->by_score) s.zset.emplace_back(m, score);
      break;
    case Kind::kList: {
      const auto& items = e.state<ListValue*>()->items;
      s.list.assign(items.begin(), items.end());
      break;
    }
    case Kind::kSet: {
      const SetValue& set = *e.state<SetValue*>();
      s.list.reserve(set.size());
      for (const std::string* m : set.members) s.list.push_back(*m);
      break;
    }
    case Kind::kNone:
      break;
  }
  return s;
}

void restore_into(Entry& e, const EntrySnapshot& s) {
  switch (s.kind) {
    case Kind::kTokenBucket:
      e.state<TokenBucketState>().full_at_ns = s.fields[0];
      break;
    case Kind::kGcra:
      e.state<GcraState>().tat_ns = s.fields[0];
      break;
    case Kind::kFixedWindow:
    case Kind::kCalendarWindow:
      e.state<FixedWindowState>() = FixedWindowState{s.fields[0], s.fields[1]};
      break;
    case Kind::kSlidingWindow:
      e.state<SlidingWindowState>() =
          SlidingWindowState{s.fields[0], s.fields[1], s.fields[2], s.fields[3]};
      break;
    case Kind::kSlidingLog: {
      SlidingLogState& l = *e.state<SlidingLogState*>();
      l.entries.clear();
      l.head = 0;
      l.total = 0;
      l.window_ns = s.fields[0];
      for (const auto& [at, cost] : s.log) {
        l.entries.push_back({at, cost});
        l.total += cost;
      }
      break;
    }
    case Kind::kConcurrency: {
      LeaseSet& set = *e.state<LeaseSet*>();
      set = LeaseSet();
      for (const Lease& lease : s.leases) set.restore(lease);
      break;
    }
    case Kind::kString:
      string_set(e, s.value);
      break;
    case Kind::kHash:
      e.state<HashValue*>()->fields = s.hash;
      e.state<HashValue*>()->recount();
      break;
    case Kind::kZSet: {
      ZSetValue& z = *e.state<ZSetValue*>();
      z = ZSetValue();
      for (const auto& [m, score] : s.zset) z.set(m, score);
      break;
    }
    case Kind::kList:
      e.state<ListValue*>()->items.assign(s.list.begin(), s.list.end());
      e.state<ListValue*>()->recount();
      break;
    case Kind::kSet: {
      SetValue& set = *e.state<SetValue*>();
      set = SetValue();
      const int64_t intset_max = encoding_thresholds().set_intset.load(std::memory_order_relaxed);
      for (const std::string& m : s.list) set.add(m, intset_max);
      break;
    }
    case Kind::kNone:
      break;
  }
}

}  // namespace fg
