// The limiters' rows of the kinds table (value_kinds.hpp): how each limiter's state lives in
// an entry, rests, weighs, is copied and merged; its algorithm is its own file's
// (token_bucket.cpp, gcra.cpp, ...). Also the row of no kind at all.
#include <algorithm>

#include "entry_snapshot.hpp"
#include "fixed_window.hpp"
#include "gcra.hpp"
#include "key_table.hpp"
#include "lease_set.hpp"
#include "shard_op.hpp"
#include "sliding_log.hpp"
#include "sliding_window.hpp"
#include "token_bucket.hpp"
#include "value_kinds.hpp"

namespace fg {
namespace {

// `theirs` into `mine` if later.
bool later(int64_t& mine, int64_t theirs) {
  if (theirs <= mine) return false;
  mine = theirs;
  return true;
}

int64_t fixed_state_usage(Entry&) { return 64; }  // (a limiter's state, as MEMORY USAGE counts it)

// A fixed-size limiter's snapshot is its state's integers, in its struct's order.
template <class State, size_t N>
void fields_out(Entry& e, EntrySnapshot& s) {
  static_assert(sizeof(State) == N * sizeof(int64_t));
  const auto* p = reinterpret_cast<const int64_t*>(&e.state<State>());
  s.fields.assign(p, p + N);
}
template <class State, size_t N>
void fields_in(Entry& e, const EntrySnapshot& s) {
  std::copy(s.fields.begin(), s.fields.begin() + N, reinterpret_cast<int64_t*>(&e.state<State>()));
}

// token_bucket {full_at_ns} and gcra {tat_ns}: the later instant.
bool merge_instant(EntrySnapshot& into, const EntrySnapshot& from) {
  return later(into.fields[0], from.fields[0]);
}

// fixed_window {window_end_ns, count}: the later window; the same window, the larger count.
bool merge_window(EntrySnapshot& into, const EntrySnapshot& from) {
  if (from.fields[0] > into.fields[0]) {
    into.fields = from.fields;
    return true;
  }
  return from.fields[0] == into.fields[0] && later(into.fields[1], from.fields[1]);
}

// sliding_window {start_ns, window_ns, curr, prev}: the later window (the earlier's current
// count becomes its previous one); the same window, the larger of each count.
bool merge_sliding_window(EntrySnapshot& into, const EntrySnapshot& from) {
  auto& a = into.fields;
  const auto& b = from.fields;
  if (a[1] != b[1]) return false;  // windows of another length: the serving copy decides
  if (b[0] == a[0]) {
    const bool curr = later(a[2], b[2]);
    return later(a[3], b[3]) || curr;
  }
  if (b[0] > a[0]) {
    const int64_t mine_start = a[0];
    const int64_t mine_curr = a[2];
    a = b;
    // Our current window is their previous one: it keeps the larger count of it.
    if (b[0] - b[1] == mine_start && mine_curr > a[3]) a[3] = mine_curr;
    return true;
  }
  if (a[0] - a[1] == b[0])
    return later(a[3], b[2]);  // theirs is one behind: its current is our previous
  return false;
}

// sliding_log: the union of the entries, an entry in both (same instant and cost) once.
bool merge_log(EntrySnapshot& into, const EntrySnapshot& from) {
  // Both oldest first: a sorted merge.
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

// concurrency: the union of the leases by id (the same lease: the later expiry).
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

// ---- token_bucket {full_at_ns}

Decision bucket_take(unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  return token_bucket_take(*reinterpret_cast<TokenBucketState*>(state), op.spec, op.cost, now, dry);
}
void bucket_adjust(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  token_bucket_adjust(e.state<TokenBucketState>(), spec, delta, now_ns);
}
void bucket_refund(Entry& e, const LimitSpec& spec, int64_t cost, int64_t, int64_t) {
  token_bucket_refund(e.state<TokenBucketState>(), spec, cost);
}
bool bucket_idle(const Entry& e, int64_t now) {
  return token_bucket_idle(e.state<TokenBucketState>(), now);
}
int64_t bucket_rest(Entry& e) { return e.state<TokenBucketState>().full_at_ns; }

// ---- gcra {tat_ns}

Decision gcra_run(unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  return gcra_take(*reinterpret_cast<GcraState*>(state), op.spec, op.cost, now, dry);
}
void gcra_charge(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  gcra_adjust(e.state<GcraState>(), spec, delta, now_ns);
}
void gcra_give_back(Entry& e, const LimitSpec& spec, int64_t cost, int64_t, int64_t now_ns) {
  gcra_refund(e.state<GcraState>(), spec, cost, now_ns);
}
bool gcra_at_rest(const Entry& e, int64_t now) { return gcra_idle(e.state<GcraState>(), now); }
int64_t gcra_rest(Entry& e) { return e.state<GcraState>().tat_ns; }

// ---- fixed_window and calendar_window {window_end_ns, count}

Decision window_take(unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  return fixed_window_take(*reinterpret_cast<FixedWindowState*>(state), op.spec, op.cost, now, dry);
}
void window_adjust(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  fixed_window_adjust(e.state<FixedWindowState>(), spec, delta, now_ns);
}
void window_refund(Entry& e, const LimitSpec& spec, int64_t cost, int64_t taken_ns, int64_t) {
  fixed_window_refund(e.state<FixedWindowState>(), spec, cost, taken_ns);
}
bool window_idle(const Entry& e, int64_t now) {
  return fixed_window_idle(e.state<FixedWindowState>(), now);
}
int64_t window_rest(Entry& e) { return e.state<FixedWindowState>().window_end_ns; }

// ---- sliding_window {start_ns, window_ns, curr, prev}

Decision sliding_take(unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  return sliding_window_take(*reinterpret_cast<SlidingWindowState*>(state), op.spec, op.cost, now,
                             dry);
}
void sliding_adjust(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  sliding_window_adjust(e.state<SlidingWindowState>(), spec, delta, now_ns);
}
void sliding_refund(Entry& e, const LimitSpec& spec, int64_t cost, int64_t taken_ns, int64_t) {
  sliding_window_refund(e.state<SlidingWindowState>(), spec, cost, taken_ns);
}
bool sliding_idle(const Entry& e, int64_t now) {
  return sliding_window_idle(e.state<SlidingWindowState>(), now);
}
int64_t sliding_rest(Entry& e) {
  const auto& w = e.state<SlidingWindowState>();
  return w.start_ns + 2 * w.window_ns;
}

// ---- sliding_log: its entries outside the entry; snapshot {window_ns} and the live ones

SlidingLogState& log_of(const Entry& e) { return *e.state<SlidingLogState*>(); }
void log_make(Entry& e) { e.state<SlidingLogState*>() = new SlidingLogState(); }
void log_free(Entry& e) { delete e.state<SlidingLogState*>(); }
Decision log_take(unsigned char* state, const ShardOp& op, int64_t now, bool dry) {
  return sliding_log_take(**reinterpret_cast<SlidingLogState**>(state), op.spec, op.cost, now, dry);
}
void log_adjust(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns) {
  sliding_log_adjust(log_of(e), spec, delta, now_ns);
}
void log_refund(Entry& e, const LimitSpec&, int64_t cost, int64_t taken_ns, int64_t) {
  sliding_log_refund(log_of(e), cost, taken_ns);
}
bool log_idle(const Entry& e, int64_t now) { return sliding_log_idle(log_of(e), now); }
int64_t log_rest(Entry& e) {
  const SlidingLogState& l = log_of(e);
  return l.live() ? l.entries.back().at_ns + l.window_ns : 0;
}
uint64_t log_bytes(const Entry& e) {
  return sizeof(SlidingLogState) + log_of(e).entries.capacity() * sizeof(SlidingLogState::Entry);
}
void log_snapshot(Entry& e, EntrySnapshot& s) {
  const SlidingLogState& l = log_of(e);
  s.fields = {l.window_ns};
  for (size_t i = l.head; i < l.entries.size(); ++i)
    s.log.emplace_back(l.entries[i].at_ns, l.entries[i].cost);
}
void log_restore(Entry& e, const EntrySnapshot& s) {
  SlidingLogState& l = log_of(e);
  l.entries.clear();
  l.head = 0;
  l.total = 0;
  l.window_ns = s.fields[0];
  for (const auto& [at, cost] : s.log) {
    l.entries.push_back({at, cost});
    l.total += cost;
  }
}

// ---- concurrency: its leases outside the entry

LeaseSet& leases_of(const Entry& e) { return *e.state<LeaseSet*>(); }
void leases_make(Entry& e) { e.state<LeaseSet*>() = new LeaseSet(); }
void leases_free(Entry& e) { delete e.state<LeaseSet*>(); }
bool leases_idle(const Entry& e, int64_t now) { return leases_of(e).idle(now); }
int64_t leases_rest(Entry& e) {
  int64_t t = 0;
  for (const Lease& l : leases_of(e).leases()) t = std::max(t, l.expires_at_ns);
  return t;
}
uint64_t leases_bytes(const Entry& e) {
  return sizeof(LeaseSet) + leases_of(e).leases().capacity() * sizeof(Lease);
}
void leases_snapshot(Entry& e, EntrySnapshot& s) { s.leases = leases_of(e).leases(); }
void leases_restore(Entry& e, const EntrySnapshot& s) {
  LeaseSet& set = leases_of(e);
  set = LeaseSet();
  for (const Lease& lease : s.leases) set.restore(lease);
}

bool never_idle(const Entry&, int64_t) { return true; }
void nothing_out(Entry&, EntrySnapshot&) {}
void nothing_in(Entry&, const EntrySnapshot&) {}

}  // namespace

const KindRow kNoneKind = {Kind::kNone, 0,
                           0,           false,
                           nullptr,     nullptr,
                           &never_idle, nullptr,
                           nullptr,     &fixed_state_usage,
                           nullptr,     &nothing_out,
                           &nothing_in, nullptr,
                           nullptr,     nullptr,
                           nullptr};

const KindRow kTokenBucketKind = {Kind::kTokenBucket,
                                  sizeof(TokenBucketState),
                                  1,
                                  true,
                                  nullptr,
                                  nullptr,
                                  &bucket_idle,
                                  &bucket_rest,
                                  nullptr,
                                  &fixed_state_usage,
                                  nullptr,
                                  &fields_out<TokenBucketState, 1>,
                                  &fields_in<TokenBucketState, 1>,
                                  &merge_instant,
                                  &bucket_take,
                                  &bucket_adjust,
                                  &bucket_refund};

const KindRow kGcraKind = {Kind::kGcra,
                           sizeof(GcraState),
                           1,
                           true,
                           nullptr,
                           nullptr,
                           &gcra_at_rest,
                           &gcra_rest,
                           nullptr,
                           &fixed_state_usage,
                           nullptr,
                           &fields_out<GcraState, 1>,
                           &fields_in<GcraState, 1>,
                           &merge_instant,
                           &gcra_run,
                           &gcra_charge,
                           &gcra_give_back};

// fixed_window, and calendar_window (a fixed window whose windows are calendar units): the
// same state and rules.
constexpr KindRow window_row(Kind kind) {
  return {kind,
          sizeof(FixedWindowState),
          2,
          true,
          nullptr,
          nullptr,
          &window_idle,
          &window_rest,
          nullptr,
          &fixed_state_usage,
          nullptr,
          &fields_out<FixedWindowState, 2>,
          &fields_in<FixedWindowState, 2>,
          &merge_window,
          &window_take,
          &window_adjust,
          &window_refund};
}
const KindRow kFixedWindowKind = window_row(Kind::kFixedWindow);
const KindRow kCalendarWindowKind = window_row(Kind::kCalendarWindow);

const KindRow kSlidingWindowKind = {Kind::kSlidingWindow,
                                    sizeof(SlidingWindowState),
                                    4,
                                    true,
                                    nullptr,
                                    nullptr,
                                    &sliding_idle,
                                    &sliding_rest,
                                    nullptr,
                                    &fixed_state_usage,
                                    nullptr,
                                    &fields_out<SlidingWindowState, 4>,
                                    &fields_in<SlidingWindowState, 4>,
                                    &merge_sliding_window,
                                    &sliding_take,
                                    &sliding_adjust,
                                    &sliding_refund};

const KindRow kSlidingLogKind = {Kind::kSlidingLog,
                                 sizeof(SlidingLogState*),
                                 1,
                                 false,
                                 &log_make,
                                 &log_free,
                                 &log_idle,
                                 &log_rest,
                                 &log_bytes,
                                 &fixed_state_usage,
                                 nullptr,
                                 &log_snapshot,
                                 &log_restore,
                                 &merge_log,
                                 &log_take,
                                 &log_adjust,
                                 &log_refund};

const KindRow kConcurrencyKind = {Kind::kConcurrency,
                                  sizeof(LeaseSet*),
                                  0,
                                  false,
                                  &leases_make,
                                  &leases_free,
                                  &leases_idle,
                                  &leases_rest,
                                  &leases_bytes,
                                  &fixed_state_usage,
                                  nullptr,
                                  &leases_snapshot,
                                  &leases_restore,
                                  &merge_leases,
                                  nullptr,
                                  nullptr,
                                  nullptr};

}  // namespace fg
