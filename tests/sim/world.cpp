#include "world.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "config.hpp"
#include "key_slot.hpp"
#include "timer.hpp"

namespace fg::sim {

namespace {
// The simulated wall clock starts here: 13 s before 2026-03-30 00:00 CEST (22:00Z), the end
// of a 23-hour day in Europe/Berlin, so the load's calendar window (scenario.cpp) crosses a
// local midnight right after a DST change. Any instant would do for the rest.
constexpr int64_t kEpochNs = (int64_t{1'774'821'600} - 13) * 1'000'000'000;
// Virtual time for timers starts past zero, so no deadline is ever before it.
constexpr int64_t kTimerStartNs = 1'000'000'000;
constexpr size_t kMaxSettleRounds = 1'000'000;

uint64_t mix(uint64_t x) {  // splitmix64: derived seeds that share no bits by accident
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Whether a loop has a handler ready. The world polls every node's loops until none runs a
// handler, most of them idle each time; an empty poll still takes the loop's lock, which was
// a tenth of the simulator's time. asio has no public test for it, so this reads the
// scheduler's queue of ready operations (asio 1.22, detail/scheduler.hpp), through the one
// legal way to name a private member: an explicit instantiation. Only this thread touches the
// loops, and never from inside a handler of theirs, so the queue is the whole story (handlers
// posted from a loop's own handlers ran in that poll). With no work left a poll would stop
// the loop; a node's loops hold work guards, so skipping them never skips that.
using OpQueue = asio::detail::op_queue<asio::detail::scheduler_operation>;
struct ReadyQueue {
  using type = OpQueue asio::detail::scheduler::*;
  friend type member(ReadyQueue);
};
template <typename Tag, typename Tag::type M>
struct Expose {
  friend typename Tag::type member(Tag) { return M; }
};
template struct Expose<ReadyQueue, &asio::detail::scheduler::op_queue_>;

bool has_ready(asio::io_context& ctx) {
  auto& sched = asio::use_service<asio::detail::io_context_impl>(ctx);
  return !(sched.*member(ReadyQueue{})).empty();
}
}  // namespace

int64_t SimClock::now_ns() const {
  const int64_t v = virtual_time::now_ns();
  if (offset_ != target_ && v - aimed_at_ >= kSlewEveryNs) {
    offset_ = slew_offset(offset_, target_, v - aimed_at_, kMaxSlewPpm);
    aimed_at_ = v;
  } else if (offset_ == target_) {
    aimed_at_ = v;
  }
  return epoch_ + v + offset_;
}

void SimClock::restart() {
  offset_ = target_;
  aimed_at_ = virtual_time::now_ns();
}

// A run killed before its end (a timeout, ^C) leaves its seeds' directories behind: the first
// world of each run removes those of processes that are gone.
static void remove_stale_disks(const std::filesystem::path& base) {
  static bool done = false;
  if (done) return;
  done = true;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "floodgate-sim.";
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.substr(prefix.size(), dot).c_str()));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // (that run is still going)
    std::filesystem::remove_all(entry.path(), ec);
  }
}

World::World(uint64_t seed, int nodes, bool disk)
    : seed_(seed), rng_(mix(seed)), start_ns_(kTimerStartNs) {
  if (disk) {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    disk_ = (base / ("floodgate-sim." + std::to_string(::getpid()) + "." + std::to_string(seed)))
                .string();
    remove_stale_disks(base);
    std::filesystem::remove_all(disk_, ec);
  }
  virtual_time::enable(start_ns_);
  cfg_.set("scheduler.policy", caf::atom("testing"));
  cfg_.set("logger.verbosity", caf::atom("quiet"));
  cfg_.set("logger.console", caf::atom("none"));
  system_ = std::make_unique<caf::actor_system>(cfg_);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(system_->scheduler());
  sched_->clock().current_time = caf::actor_clock::time_point(std::chrono::nanoseconds(start_ns_));
  for (int i = 0; i < nodes; ++i) add_node();
}

World::~World() {
  for (auto& n : nodes_) {
    if (n->node) n->node->halt();
  }
  settle();
  for (auto& n : nodes_) n->node.reset();
  sched_->run();
  system_.reset();
  if (!disk_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(disk_, ec);
  }
}

void World::wipe_disk(size_t i) {
  if (disk_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(disk_) / nodes_[i]->id, ec);
}

void World::break_disk(size_t i) {
  if (disk_.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(disk_) / nodes_[i]->id;
  std::error_code ec;
  std::filesystem::rename(dir, dir.string() + ".away", ec);
  std::ofstream(dir) << "not a directory\n";
}

void World::mend_disk(size_t i) {
  if (disk_.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(disk_) / nodes_[i]->id;
  std::error_code ec;
  std::filesystem::remove(dir, ec);
  std::filesystem::rename(dir.string() + ".away", dir, ec);
}

int64_t World::now() const { return virtual_time::now_ns() - start_ns_; }

int64_t World::wall_at(int64_t t) const { return kEpochNs + start_ns_ + t; }

int World::add_node(const std::string& id) {
  auto n = std::make_unique<SimNode>();
  n->index = static_cast<int>(nodes_.size());
  n->id = id.empty() ? "n" + std::to_string(n->index) : id;
  n->port = 7000 + n->index;
  n->bus = 17000 + n->index;
  n->clock = std::make_unique<SimClock>(kEpochNs);
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

NodeConfig World::config_for(const SimNode& n) const {
  NodeConfig c;
  c.bind = "127.0.0.1";
  c.port = n.port;
  c.native_port = 0;
  c.admin_port = 0;
  c.cluster_enabled = true;
  c.node_id = n.id;
  c.cluster_port = n.bus;
  // Seeds: the first nodes (a node joining later, or back, finds the cluster through them).
  for (size_t i = 0; i < nodes_.size() && c.seeds.size() < 2; ++i) {
    if (nodes_[i].get() != &n) c.seeds.push_back(nodes_[i]->bus_addr());
  }
  c.io_threads = 1;
  c.shard_threads = 1;
  c.shards = 2;
  if (!disk_.empty()) {
    c.dir = (std::filesystem::path(disk_) / n.id).string();
    c.save_interval_ms = 3000;
  }
  if (change_config_) change_config_(c);
  resolve_defaults(c);
  return c;
}

void World::connect(size_t i, MemoryClient& client, bool native) {
  auto& mine = nodes_[i]->clients;
  mine.erase(std::remove_if(mine.begin(), mine.end(), [](const auto& w) { return w.expired(); }),
             mine.end());
  mine.push_back(client.pipe());
  nodes_[i]->node->adopt_client(
      [&client](asio::any_io_executor ex) { return client.node_end(std::move(ex)); }, native);
}

void World::start(size_t i) {
  SimNode& n = *nodes_[i];
  if (n.node) return;
  n.clock->restart();
  n.paused = false;
  NodeRun run;
  run.polled = true;
  run.seed = mix(seed_ ^ mix(i * 1000 + n.starts + 1));
  ++n.starts;
  n.node = std::make_unique<Node>(config_for(n), *system_, *n.clock,
                                  NodeNets{&peers_.node(n.bus_addr()), &datagrams_}, run);
  std::string why;
  if (n.node->start(why) != 0) {
    throw std::runtime_error("node " + n.id + " did not start: " + why);
  }
}

void World::crash(size_t i) {
  SimNode& n = *nodes_[i];
  if (!n.node) return;
  n.node->halt();
  sched_->run();  // its actors end before the node they call back into is gone
  for (auto& w : n.clients) {
    if (auto p = w.lock()) MemoryClient::node_gone(p);
  }
  n.clients.clear();
  n.node.reset();
  n.paused = false;
}

void World::at(int64_t t, std::function<void()> f) {
  events_.push(Event{t, event_seq_++, std::move(f)});
}

size_t World::settle() {
  size_t total = 0;
  for (size_t round = 0; round < kMaxSettleRounds; ++round) {
    size_t n = virtual_time::fire_due();
    for (auto& sn : nodes_) {
      if (!sn->node || sn->paused) continue;
      if (verbose_) {
        spdlog::set_pattern("%l " + std::to_string(now() / 1'000'000) + "ms " + sn->id + ": %v");
      }
      n += sn->node->poll(&has_ready);
    }
    n += run_actors();
    if (n == 0) break;
    total += n;
  }
  return total;
}

// A paused node's shard actors stop with it (SIGSTOP stops every thread): their mailboxes
// wait, and what is in them runs when the node wakes, on the clock of then.
size_t World::run_actors() {
  std::vector<const caf::resumable*> stopped;
  for (const auto& n : nodes_) {
    if (!n->node || !n->paused) continue;
    const ShardPool& pool = *n->node->services().shards;
    for (size_t i = 0; i < pool.size(); ++i) {
      stopped.push_back(dynamic_cast<const caf::resumable*>(
          caf::actor_cast<caf::abstract_actor*>(pool.actor(i))));
    }
  }
  if (stopped.empty()) return sched_->run();
  return sched_->run_jobs_filtered([&](const caf::resumable* job) {
    return std::find(stopped.begin(), stopped.end(), job) == stopped.end();
  });
}

void World::advance_to(int64_t t_virtual) {
  if (t_virtual <= virtual_time::now_ns()) return;
  virtual_time::set_ns(t_virtual);
  auto& clock = sched_->clock();
  const auto target = caf::actor_clock::time_point(std::chrono::nanoseconds(t_virtual));
  if (target > clock.current_time) clock.advance_time(target - clock.current_time);
}

void World::run_until(int64_t t) {
  const int64_t end = start_ns_ + t;
  for (;;) {
    settle();
    int64_t next = end;
    int64_t d;
    if (virtual_time::next_deadline(d)) next = std::min(next, d);
    const auto& caf_schedule = sched_->clock().schedule();
    if (!caf_schedule.empty()) {
      next = std::min<int64_t>(next, caf_schedule.begin()->first.time_since_epoch().count());
    }
    if (!events_.empty()) next = std::min(next, start_ns_ + events_.top().t);
    next = std::max(next, virtual_time::now_ns());
    advance_to(next);
    bool ran = false;
    while (!events_.empty() && start_ns_ + events_.top().t <= virtual_time::now_ns()) {
      // (Moved, not copied, out of the top: the heap orders by t and seq alone.)
      Event e = std::move(const_cast<Event&>(events_.top()));
      events_.pop();
      e.f();
      ran = true;
    }
    if (!ran && virtual_time::now_ns() >= end) {
      settle();
      return;
    }
  }
}

int World::index_of(const std::string& id) const {
  for (const auto& n : nodes_)
    if (n->id == id) return n->index;
  return -1;
}

std::optional<MemberState> World::state_seen(size_t by, const std::string& id) const {
  const auto rt = nodes_[by]->node->services().routing->get();
  for (const auto& rn : rt->nodes)
    if (rn.id == id) return rn.state;
  return std::nullopt;
}

int World::owner_of(const std::string& key) const {
  const uint32_t slot = key_slot(key);
  for (const auto& n : nodes_) {
    if (!n->node || n->paused) continue;
    const auto rt = n->node->services().routing->get();
    if (rt->epoch == 0 || rt->owner[slot] == kNoOwner) continue;
    return index_of(rt->nodes[rt->owner[slot]].id);
  }
  return -1;
}

bool World::formed() const {
  uint64_t epoch = 0;
  size_t up = 0;
  for (const auto& n : nodes_) up += n->node && !n->paused;
  for (const auto& n : nodes_) {
    if (!n->node || n->paused) continue;
    const auto rt = n->node->services().routing->get();
    if (rt->epoch == 0 || !rt->quorum || rt->awaiting.any() || rt->lost.any()) return false;
    if (epoch != 0 && rt->epoch != epoch) return false;
    epoch = rt->epoch;
    size_t in_table = 0;
    for (const auto& rn : rt->nodes) in_table += rn.in_table;
    if (in_table != up) return false;
  }
  return epoch != 0;
}

}  // namespace fg::sim
