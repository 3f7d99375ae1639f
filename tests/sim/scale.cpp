// The scale run (scale.hpp): form N nodes at once, make keys, then measure at rest, under a
// light load, across a kill, a join and a graceful leave. Bytes are what the in-memory
// networks carried (payloads: a UDP datagram adds 28 bytes of headers, a peer frame a few);
// CPU is this process's, which runs every node on one thread.
#include "scale.hpp"

#include <malloc.h>
#include <time.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>

#include "cluster.hpp"
#include "request_job.hpp"
#include "world.hpp"

// tcmalloc's (weak: null when the simulator runs on glibc's malloc).
extern "C" int MallocExtension_GetNumericProperty(const char*, size_t*) __attribute__((weak));

namespace fg::sim {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

double cpu_now_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Bytes the program holds: tcmalloc's count when the simulator is linked with it
// (tests/CMakeLists.txt), which glibc's mallinfo2 would not see; else glibc's, large blocks
// (mapped on their own, as a table's arrays are) included.
double heap_now() {
  size_t held = 0;
  if (MallocExtension_GetNumericProperty != nullptr &&
      MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &held) != 0) {
    return static_cast<double>(held);
  }
  const struct mallinfo2 m = mallinfo2();  // (mmapped blocks, hblkhd, are not in uordblks)
  return static_cast<double>(m.uordblks + m.hblkhd);
}

struct Meter {
  uint64_t gossip = 0, peer = 0, handoff = 0;
  size_t largest = 0;
  double cpu = 0;
  int64_t at = 0;
};

Meter meter(World& w) {
  Meter m;
  m.gossip = w.datagrams().delivered_bytes();
  m.largest = w.datagrams().largest();
  for (const auto& [kind, t] : w.peers().traffic()) {
    m.peer += t.request_bytes + t.answer_bytes;
    if (kind == kPeerHandoff) m.handoff += t.request_bytes;
  }
  m.cpu = cpu_now_s();
  m.at = w.now();
  return m;
}

uint64_t keys_handed(World& w) {
  uint64_t n = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!w.node(i).up()) continue;
    n += w.node(i).node->services().cluster->counters().keys_received.load();
  }
  return n;
}

class Scale {
 public:
  explicit Scale(const ScaleRun& r) : r_(r), world_(r.seed, r.nodes) {}

  ScaleFigures go() {
    f_.nodes = r_.nodes;
    f_.seed = r_.seed;
    const double heap0 = heap_now();
    for (int i = 0; i < r_.nodes; ++i) world_.start(i);
    if (!wait_formed(600 * kS, f_.form_s)) return fail("the cluster did not form in 600 s");
    f_.heap_per_node = (heap_now() - heap0) / r_.nodes;
    // The table can be agreed before every node has heard of every member (a member nobody
    // told a node about is dead to it, and so are the keys it owns, there).
    {
      const int64_t t0 = world_.now();
      while (!all_know_all()) {
        if (world_.now() - t0 > 600 * kS) return fail("members never all heard of each other");
        world_.run_until(world_.now() + 100 * kMs);
      }
      f_.view_s = f_.form_s + (world_.now() - t0) / 1e9;
    }

    make_keys();
    if (!f_.error.empty()) return f_;
    if (!wait_formed(60 * kS, ignored_)) return fail("keys: the cluster came apart");

    // At rest (after 10 s: what forming the cluster and making the keys sent is past).
    world_.run_until(world_.now() + 10 * kS);
    Meter a = meter(world_);
    world_.run_until(world_.now() + r_.rest_seconds * kS);
    Meter b = meter(world_);
    per_node(a, b, f_.gossip_rest, f_.peer_rest, f_.cpu_rest_us);

    // Under a light load: requests through random nodes on the keys made.
    a = meter(world_);
    load(r_.load_seconds * kS);
    b = meter(world_);
    per_node(a, b, f_.gossip_load, f_.peer_load, f_.cpu_load_us);
    world_.run_until(world_.now() + kS);

    // A kill: detection, the failover table's spread.
    const int victim = r_.nodes - 1;
    world_.crash(victim);
    const int64_t killed = world_.now();
    const std::string id = world_.node(victim).id;
    int64_t detected = -1, first = -1, last = -1;
    uint64_t epoch0 = epoch_of(0);
    while (world_.now() - killed < 120 * kS) {
      world_.run_until(world_.now() + 10 * kMs);
      if (detected < 0 && all_see_dead(id)) detected = world_.now();
      if (first < 0 && any_epoch_above(epoch0)) first = world_.now();
      if (detected >= 0 && world_.formed()) {
        last = world_.now();
        break;
      }
    }
    if (detected < 0 || last < 0) return fail("a kill was not detected or healed in 120 s");
    f_.detect_ms = (detected - killed) / 1e6;
    f_.failover_ms = (last - killed) / 1e6;
    f_.spread_ms = (last - first) / 1e6;

    f_.keys_lost = static_cast<double>(r_.keys) - static_cast<double>(all_keys());
    // A join (the killed node's machine replaced: a new node), then a graceful leave.
    {
      const uint64_t keys0 = keys_handed(world_);
      const Meter m0 = meter(world_);
      const int n = world_.add_node();
      world_.start(n);
      double took = 0;
      if (!wait_formed(120 * kS, took)) return fail("a join did not settle in 120 s");
      world_.run_until(world_.now() + kS);  // (hand-offs finish after the table)
      f_.join_ms = took * 1e3;
      f_.join_keys = static_cast<double>(keys_handed(world_) - keys0);
      f_.join_bytes = static_cast<double>(meter(world_).handoff - m0.handoff);
    }
    {
      const int leaver = 1 + static_cast<int>(world_.rng()() % (r_.nodes - 2));
      uint64_t keys0 = 0;
      for (size_t i = 0; i < world_.size(); ++i) {
        if (world_.node(i).up() && static_cast<int>(i) != leaver) {
          keys0 += world_.node(i).node->services().cluster->counters().keys_received.load();
        }
      }
      const Meter m0 = meter(world_);
      const int64_t began = world_.now();
      world_.node(leaver).node->begin_leave();
      do {
        world_.run_until(world_.now() + 10 * kMs);
      } while (world_.now() - began < 10 * kS && !world_.node(leaver).node->left());
      world_.crash(leaver);
      double took = 0;
      if (!wait_formed(120 * kS, took)) return fail("a leave did not settle in 120 s");
      f_.leave_ms = (world_.now() - began) / 1e6;
      f_.leave_keys = static_cast<double>(keys_handed(world_) - keys0);
      f_.leave_bytes = static_cast<double>(meter(world_).handoff - m0.handoff);
    }
    f_.largest_datagram = static_cast<double>(meter(world_).largest);
    return f_;
  }

 private:
  ScaleFigures fail(const std::string& why) {
    f_.error = why;
    return f_;
  }

  bool wait_formed(int64_t limit_ns, double& took_s) {
    const int64_t t0 = world_.now();
    // (polled every 50 ms: formed() reads every node's routing snapshot)
    while (!world_.formed()) {
      if (world_.now() - t0 > limit_ns) return false;
      world_.run_until(world_.now() + 50 * kMs);
    }
    took_s = (world_.now() - t0) / 1e9;
    return true;
  }

  std::vector<int> up() {
    std::vector<int> out;
    for (size_t i = 0; i < world_.size(); ++i)
      if (world_.node(i).up()) out.push_back(static_cast<int>(i));
    return out;
  }

  void submit(int node, size_t key, bool make = false) {
    Services& svc = world_.node(node).node->services();
    std::vector<Request> reqs(1);
    reqs[0].verb = Verb::kTake;
    reqs[0].key = keys_[key];
    // (a day: the simulated clock is two hours from the end of a UTC day, one second of it
    // from the end of an hour)
    reqs[0].spec = LimitSpec::window(Kind::kFixedWindow, 1000000, 86400 * kS);
    ++outstanding_;
    RequestJob::start(svc, svc.lane(), std::move(reqs), Door{}, nullptr,
                      [this, key, make](std::vector<Outcome>& out) {
                        --outstanding_;
                        if (make && (out.empty() || out[0].code != Code::kOk)) {
                          refused_.push_back(key);
                        }
                      });
  }

  // Every key made once (a request refused — a forward queue full, a slot still arriving —
  // is asked again, up to five rounds).
  void make_keys() {
    keys_.reserve(r_.keys);
    for (int64_t i = 0; i < r_.keys; ++i) keys_.push_back("scale:" + std::to_string(i));
    std::vector<size_t> todo(keys_.size());
    for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
    for (int round = 0; round < 5 && !todo.empty(); ++round) {
      const std::vector<int> nodes = up();
      refused_.clear();
      for (size_t i = 0; i < todo.size(); ++i) {
        submit(nodes[todo[i] % nodes.size()], todo[i], true);
        if (i % 1000 == 999) world_.run_until(world_.now() + 10 * kMs);
      }
      const int64_t t0 = world_.now();
      while (outstanding_ > 0 && world_.now() - t0 < 30 * kS)
        world_.run_until(world_.now() + 10 * kMs);
      todo = refused_;
      world_.run_until(world_.now() + 100 * kMs);
    }
    if (!todo.empty() || outstanding_ > 0) f_.error = "keys: some were refused five times";
  }

  void load(int64_t span_ns) {
    const int64_t end = world_.now() + span_ns;
    const std::vector<int> nodes = up();
    const int64_t per_ms = std::max<int64_t>(1, r_.load_per_s / 1000);
    while (world_.now() < end) {
      for (int64_t i = 0; i < per_ms; ++i) {
        submit(nodes[world_.rng()() % nodes.size()], world_.rng()() % keys_.size());
      }
      world_.run_until(world_.now() + kMs);
    }
  }

  void per_node(const Meter& a, const Meter& b, double& gossip, double& peer, double& cpu_us) {
    const double secs = (b.at - a.at) / 1e9;
    const double n = static_cast<double>(up().size());
    gossip = static_cast<double>(b.gossip - a.gossip) / secs / n;
    peer = static_cast<double>(b.peer - a.peer) / secs / n;
    cpu_us = (b.cpu - a.cpu) * 1e6 / secs / n;
  }

  // Keys of the slots node i owns (its served ones, not its replica copies).
  size_t owned_keys(int i) {
    auto rt = world_.node(i).node->services().routing->get();
    auto job = std::make_shared<ExtractJob>();
    for (uint32_t s = 0; s < kSlotCount; ++s)
      if (static_cast<int>(rt->owner[s]) == rt->self_index) job->slots.set(s);
    job->remove = false;
    bool done = false;
    job->done = [&done](ExtractJob&) { done = true; };
    job->now_ns = world_.node(i).clock->now_ns();
    world_.node(i).node->services().shards->extract(job);
    while (!done) world_.settle();
    size_t n = 0;
    for (auto& part : job->per_shard) n += part.size();
    return n;
  }
  size_t all_keys() {
    size_t n = 0;
    for (int i : up()) n += owned_keys(i);
    return n;
  }

  uint64_t epoch_of(int i) { return world_.node(i).node->services().routing->get()->epoch; }

  bool any_epoch_above(uint64_t e) {
    for (int i : up())
      if (epoch_of(i) > e) return true;
    return false;
  }

  bool all_know_all() {
    const std::vector<int> nodes = up();
    for (int i : nodes) {
      for (int j : nodes) {
        if (i == j) continue;
        const auto st = world_.state_seen(i, world_.node(j).id);
        if (!st || *st != MemberState::kAlive) return false;
      }
    }
    return true;
  }

  bool all_see_dead(const std::string& id) {
    for (int i : up()) {
      const auto st = world_.state_seen(i, id);
      if (st && *st != MemberState::kDead && *st != MemberState::kLeft) return false;
    }
    return true;
  }

  ScaleRun r_;
  World world_;
  ScaleFigures f_;
  std::vector<std::string> keys_;
  int64_t outstanding_ = 0;
  std::vector<size_t> refused_;
  double ignored_ = 0;
};

}  // namespace

ScaleFigures run_scale(const ScaleRun& run) {
  Scale s(run);
  return s.go();
}

std::string scale_header() {
  return "nodes seed form_s view_s heap_per_node gossip_rest peer_rest gossip_load peer_load "
         "cpu_rest_us cpu_load_us detect_ms failover_ms spread_ms join_ms join_keys join_bytes "
         "leave_ms leave_keys leave_bytes keys_lost largest_datagram error wall_s";
}

std::string scale_line(const ScaleFigures& f) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "%d %llu %.2f %.2f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f "
      "%.0f %.0f %.0f %.0f %.0f",
      f.nodes, static_cast<unsigned long long>(f.seed), f.form_s, f.view_s, f.heap_per_node,
      f.gossip_rest, f.peer_rest, f.gossip_load, f.peer_load, f.cpu_rest_us, f.cpu_load_us,
      f.detect_ms, f.failover_ms, f.spread_ms, f.join_ms, f.join_keys, f.join_bytes, f.leave_ms,
      f.leave_keys, f.leave_bytes, f.keys_lost, f.largest_datagram);
  std::string out = buf;
  out += " " + (f.error.empty() ? std::string("-") : "\"" + f.error + "\"");
  return out;
}

}  // namespace fg::sim
