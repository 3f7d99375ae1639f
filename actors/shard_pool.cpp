// Routing batches to shard actors: one message per touched shard, never one per command.
#include "shard_pool.hpp"

#include <random>

#include "key_slot.hpp"

namespace fg {

ShardPool::ShardPool(caf::actor_system& sys, ShardPoolConfig cfg, const Clock* clock)
    : cfg_(cfg), clock_(clock) {
  std::random_device rd;
  const uint64_t seed = cfg_.seed ? cfg_.seed : (uint64_t{rd()} << 32) ^ rd();
  for (size_t i = 0; i < cfg_.shards; ++i) {
    ShardConfig sc;
    sc.id = static_cast<uint16_t>(i);
    sc.max_keys = (cfg_.max_keys + cfg_.shards - 1) / cfg_.shards;
    cells_.push_back(std::make_shared<ShardCell>(sc.max_keys, seed + (uint64_t{i} << 56)));
    cells_.back()->shard.set_max_string(cfg_.max_string_bytes);
    if (cfg_.accounts) cells_.back()->shard.set_accounts(cfg_.accounts);
    cells_.back()->shard.set_place(static_cast<uint16_t>(i), static_cast<uint16_t>(cfg_.shards));
    sc.sweep_interval_ms = cfg_.sweep_interval_ms;
    sc.sweep_budget = cfg_.sweep_budget;
    sc.cluster = cfg_.cluster;
    sc.siblings = &shards_;
    shards_.push_back(sys.spawn<ShardActorImpl>(sc, clock, cells_[i]));
  }
}

ShardPool::~ShardPool() {
  for (auto& s : shards_) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

uint16_t ShardPool::shard_of(std::string_view key) const {
  // Slots map to shards so a slot's keys stay together when slots move between nodes.
  if (shards_.size() == 1) return 0;  // spare the CRC on the I/O thread
  return shard_of_slot(key_slot(key));
}

bool ShardPool::run_in_place(size_t i, const BatchPtr& b) {
  ShardCell& c = *cells_[i];
  if (!c.try_in_place()) return false;
  std::unique_lock<std::mutex> hold(c.gate, std::adopt_lock);
  if (c.parked) return false;
  const int64_t now_ns = clock_->now_ns();
  c.shard.execute_batch(b->ops, static_cast<uint16_t>(i), now_ns);
  c.ran_in_place_ns = now_ns;
  // On a busy node the sweeper's rounds are paid here, one after each batch run in place
  // (ShardActorImpl::sweep_round), so the shard stays with the thread that submits to it.
  // Paid by the actor, a round took the shard to the actor's thread, the batches submitted
  // meanwhile followed it into the mailbox, and on a core the two threads shared they took
  // turns at the kernel's pace (milliseconds): a light caller's request waited that long
  // behind a flood.
  if (c.shard.sweep_owed()) c.shard.sweep_round(now_ns, cfg_.sweep_budget);
  return true;
}

bool ShardPool::step_in_place(uint64_t mask, const BatchPtr& b) {
  // Every shard of the step at once, or none: taken in ascending order, never waited for.
  std::unique_lock<std::mutex> holds[kMaxShards];
  b->step = Step{};
  b->step.mask = mask;
  for (uint64_t m = mask; m; m &= m - 1) {
    const size_t i = __builtin_ctzll(m);
    ShardCell& c = *cells_[i];
    if (!c.try_in_place()) return false;
    holds[i] = std::unique_lock<std::mutex>(c.gate, std::adopt_lock);
    if (c.parked) return false;
    b->step.shards[i] = &c.shard;
  }
  Shard::execute_step(b->ops, b->step, clock_->now_ns());
  return true;
}

void ShardPool::submit(const BatchPtr& b, int extra, bool in_place) {
  uint64_t mask = 0;
  for (const ShardOp& op : b->ops) {
    if (op.shard == kAllShards) {
      mask = shards_.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << shards_.size()) - 1;
      break;
    }
    mask |= uint64_t{1} << op.shard;
  }
  // A step over the shards the batch holds together (each has work in it, or holds a key
  // of an op on another), if it spans two or more of them.
  uint64_t step = b->step_shards;
  if (__builtin_popcountll(step) < 2) step = 0;
  mask &= ~step;
  const int n = __builtin_popcountll(mask) + (step ? 1 : 0);
  if (n + extra == 0) {
    b->sink->batch_done();
    return;
  }
  b->pending.store(n + extra, std::memory_order_release);
  // The parts run in place are counted off at the end, so the batch cannot complete (and be
  // reused by its sender) while this still reads it.
  int done_here = 0;
  if (step) {
    if (in_place && step_in_place(step, b)) {
      ++done_here;
    } else {
      b->step = Step{};
      b->step.mask = step;
      caf::anon_send(shards_[__builtin_ctzll(step)], step_atom::value, b);
    }
  }
  for (size_t i = 0; mask; ++i, mask >>= 1) {
    if (!(mask & 1)) continue;
    if (in_place && run_in_place(i, b)) {
      ++done_here;
    } else {
      cells_[i]->stats.queued.fetch_add(1, std::memory_order_relaxed);
      caf::anon_send(shards_[i], batch_atom::value, b);
    }
  }
  if (done_here && b->pending.fetch_sub(done_here, std::memory_order_acq_rel) == done_here) {
    b->sink->batch_done();
  }
}

namespace {
template <class Job, class Atom>
void send_all(std::vector<shard_actor>& shards, const std::shared_ptr<Job>& j, Atom atom) {
  j->pending.store(static_cast<int>(shards.size()), std::memory_order_release);
  for (auto& s : shards) caf::anon_send(s, atom, j);
}
}  // namespace

void ShardPool::extract(const ExtractJobPtr& j) {
  j->per_shard.assign(shards_.size(), {});
  send_all(shards_, j, extract_atom::value);
}

void ShardPool::collect(const CollectJobPtr& j) {
  j->parts.resize(shards_.size());
  send_all(shards_, j, collect_atom::value);
}

void ShardPool::install(const InstallJobPtr& j, std::vector<EntrySnapshot> entries) {
  j->per_shard.assign(shards_.size(), {});
  for (auto& e : entries) j->per_shard[shard_of(e.key)].push_back(std::move(e));
  send_all(shards_, j, install_atom::value);
}

void ShardPool::copy(const CopyJobPtr& j) {
  j->per_shard.assign(shards_.size(), {});
  j->pending.store(static_cast<int>(shards_.size()), std::memory_order_release);
  for (auto& s : shards_) caf::anon_send(s, copy_atom::value, j, uint32_t{0}, uint32_t{0});
}

void ShardPool::merge(const MergeJobPtr& j, std::vector<EntrySnapshot> entries) {
  j->per_shard.assign(shards_.size(), {});
  j->refused.assign(shards_.size(), {});
  for (auto& e : entries) j->per_shard[shard_of(e.key)].push_back(std::move(e));
  send_all(shards_, j, merge_atom::value);
}

void ShardPool::keep_copy(const ReplicaJobPtr& j, std::vector<EntrySnapshot> entries,
                          std::vector<std::string> packed) {
  j->packed = std::move(packed);
  j->packed.resize(shards_.size());
  j->per_shard.assign(shards_.size(), {});
  for (auto& e : entries) j->per_shard[shard_of(e.key)].push_back(std::move(e));
  send_all(shards_, j, replica_atom::value);
}

int64_t ShardPool::leases() const {
  int64_t n = 0;
  for (auto& c : cells_) n += c->stats.leases.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::queued(size_t shard) const {
  return cells_[shard]->stats.queued.load(std::memory_order_relaxed);
}

int64_t ShardPool::keys() const {
  int64_t n = 0;
  for (auto& c : cells_) n += c->stats.keys.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::bytes() const {
  int64_t n = 0;
  for (auto& c : cells_) n += c->stats.bytes.load(std::memory_order_relaxed);
  return n;
}

int64_t ShardPool::expired() const {
  int64_t n = 0;
  for (auto& c : cells_) n += c->stats.expired.load(std::memory_order_relaxed);
  return n;
}

}  // namespace fg
