// In-process nodes for tests of the doors and the request core: real shard actors on a
// frozen clock, a hand-made routing snapshot, one I/O lane (an event loop on its own thread
// with its batcher, as a node's I/O thread) and forwarding between nodes through memory.
// Tests talk to a node through RespConn / NativeConn, which drive its doors on its lane the
// way node/Connection and node/NativeConnection do, without sockets.
#pragma once
#include <gtest/gtest.h>

#include <asio.hpp>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "forwarding.hpp"
#include "io_batcher.hpp"
#include "key_slot.hpp"
#include "length_prefix.hpp"
#include "native.pb.h"
#include "native_session.hpp"
#include "native_wire.hpp"
#include "resp_session.hpp"
#include "shard_actor.hpp"

namespace fg {

class TestNode;

// Forwarded batches go straight into the owner's serve_forwarded(); a cut address answers
// "unreachable", as a dead peer's link does.
class MemoryForwarder : public Forwarder {
 public:
  void attach(const std::string& peer_addr, TestNode* node) {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_[peer_addr] = node;
  }
  void cut(const std::string& peer_addr) {
    std::lock_guard<std::mutex> lock(mu_);
    cut_.insert(peer_addr);
  }
  void heal() {
    std::lock_guard<std::mutex> lock(mu_);
    cut_.clear();
  }
  // While held, what is sent waits (recorded as sent) until release() delivers it, in order.
  void hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void release() {
    std::vector<Held> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
      held.swap(waiting_);
    }
    for (Held& h : held) deliver(h.node, std::move(h.batch), std::move(h.done));
  }
  // Every batch sent so far, as the owner received it.
  std::vector<forward::ForwardBatch> sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  // The threads the owners answered on.
  std::set<std::thread::id> answered_on() {
    std::lock_guard<std::mutex> lock(mu_);
    return answered_on_;
  }
  void send(const std::string& peer_addr, std::string batch, int64_t,
            std::function<void(bool ok, std::string body)> done) override;

 private:
  std::mutex mu_;
  std::map<std::string, TestNode*> nodes_;
  struct Held {
    TestNode* node;
    std::string batch;
    std::function<void(bool ok, std::string body)> done;
  };
  void deliver(TestNode* node, std::string batch, std::function<void(bool, std::string)> done);
  std::set<std::string> cut_;
  bool held_ = false;
  std::vector<Held> waiting_;
  std::vector<forward::ForwardBatch> sent_;
  std::set<std::thread::id> answered_on_;
};

class TestNode {
 public:
  // `cluster`: the shards serve only slots handed to them (serve()), routing from publish().
  // `own_lane_thread` false: no thread runs the event loop; the caller drives `io` itself
  // (the core's microbenchmark, which runs the lane on its own thread).
  TestNode(caf::actor_system& sys, const Clock& clock, bool cluster, MemoryForwarder* net = nullptr,
           size_t max_keys = 100000, bool own_lane_thread = true)
      : acl(acl_catalog(), clock), bound_("test") {
    svc.clock = &clock;
    svc.policies = &policies;
    svc.clients = &clients;
    svc.acl = &acl;
    svc.bound = &bound_;
    svc.settings.run_id = "standalone-test";
    ShardPoolConfig pc;
    pc.shards = 3;
    pc.max_keys = max_keys;
    pc.cluster = cluster;
    pool = std::make_unique<ShardPool>(sys, pc, &clock);
    svc.shards = pool.get();
    if (cluster) {
      svc.routing = &hub;
      svc.forwarder = net;
    }
    batcher = std::make_unique<IoBatcher>(io, svc, 4096);
    svc.lanes.push_back(Lane{&io, batcher.get()});
    if (own_lane_thread) thread = std::thread([this] { io.run(); });
  }
  ~TestNode() {
    guard.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }

  // The shards serve `slots` from now on (their state arrived, or the cluster is new).
  void serve(const SlotBits& slots) {
    auto job = std::make_shared<InstallJob>();
    job->slots = slots;
    std::promise<void> p;
    job->done = [&p](InstallJob&) { p.set_value(); };
    pool->install(job, {});
    p.get_future().get();
  }
  void publish(std::shared_ptr<Routing> r) { hub.publish(std::move(r)); }
  // Runs `f` on the node's I/O thread and waits for it.
  template <class F>
  void run(F f) {
    std::promise<void> p;
    asio::post(io, [&] {
      f();
      p.set_value();
    });
    p.get_future().get();
  }
  std::thread::id lane_thread() const { return thread.get_id(); }
  BoundLeases& bound() { return bound_; }

  Services svc;
  PolicyRegistry policies;
  ClientRegistry clients{1000};
  AclBook acl;
  RoutingHub hub;
  std::unique_ptr<ShardPool> pool;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  std::unique_ptr<IoBatcher> batcher;
  std::thread thread;

 private:
  BoundLeases bound_;
};

inline void MemoryForwarder::send(const std::string& peer_addr, std::string batch, int64_t,
                                  std::function<void(bool ok, std::string body)> done) {
  TestNode* node = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    forward::ForwardBatch b;
    b.ParseFromString(batch);
    sent_.push_back(b);
    auto it = nodes_.find(peer_addr);
    if (it != nodes_.end() && !cut_.count(peer_addr)) node = it->second;
    if (node && held_) return waiting_.push_back({node, std::move(batch), std::move(done)});
  }
  if (!node) return done(false, "unreachable");
  deliver(node, std::move(batch), std::move(done));
}

inline void MemoryForwarder::deliver(TestNode* node, std::string batch,
                                     std::function<void(bool ok, std::string body)> done) {
  serve_forwarded(node->svc, std::move(batch), [this, done](bool ok, std::string body) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      answered_on_.insert(std::this_thread::get_id());
    }
    done(ok, std::move(body));
  });
}

// One RESP connection to a TestNode: bytes in, every reply out, as node/Connection runs it.
class RespConn {
 public:
  explicit RespConn(TestNode& n)
      : node_(n),
        session_(
            std::make_shared<RespSession>(n.svc, n.clients.add("127.0.0.1:1", "127.0.0.1:2", 0))) {}

  // Sends `in`; returns every reply, stopping early at a protocol error (closed()) or a
  // command whose slot's state is arriving (last().stalled).
  std::string send(const std::string& in) {
    auto pump = std::make_shared<Pump>();
    pump->session = session_;
    pump->batcher = node_.batcher.get();
    pump->in = in;
    auto done = pump->done.get_future();
    asio::post(node_.io, [pump] { pump->step(); });
    done.get();
    last_ = pump->last;
    closed_ = closed_ || pump->last.close;
    std::string out;
    out.swap(session_->output());
    return out;
  }
  std::string cmd(const std::vector<std::string>& words) { return send(resp(words)); }
  static std::string resp(const std::vector<std::string>& words) {
    std::string in = "*" + std::to_string(words.size()) + "\r\n";
    for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    return in;
  }
  const ProcessResult& last() const { return last_; }
  bool closed() const { return closed_; }
  ClientInfo& client() { return session_->client(); }

 private:
  struct Pump : BatchWaiter, std::enable_shared_from_this<Pump> {
    std::shared_ptr<RespSession> session;
    IoBatcher* batcher = nullptr;
    std::string in;
    size_t pos = 0;
    ProcessResult last;
    std::promise<void> done;
    void step() {
      while (true) {
        last = session->process(in.data() + pos, in.size() - pos, batcher->current());
        if (last.submitted) return batcher->join(shared_from_this());
        pos += last.consumed;
        if (last.close || last.stalled || last.consumed == 0 || pos == in.size()) {
          return done.set_value();
        }
      }
    }
    void batch_complete(Flight& f) override {
      session->complete(f);
      pos += last.consumed;
      if (last.close || pos == in.size()) return done.set_value();
      step();
    }
  };
  TestNode& node_;
  std::shared_ptr<RespSession> session_;
  ProcessResult last_;
  bool closed_ = false;
};

// One native connection to a TestNode: requests in one frame, results out.
class NativeConn {
 public:
  explicit NativeConn(TestNode& n)
      : node_(n),
        session_(std::make_shared<NativeSession>(n.svc,
                                                 n.clients.add("127.0.0.1:3", "127.0.0.1:4", 0))) {}

  // Sends one frame of `requests` (and an optional Hello); returns its results.
  std::vector<wire::ResultView> send(const std::vector<wire::RequestView>& requests,
                                     const floodgate::native::Hello* hello = nullptr) {
    std::string frame;
    wire::ClientFrameWriter w(frame);
    if (hello) w.hello(hello->SerializeAsString());
    for (const auto& r : requests) w.add(wire::encode_request(r));
    w.finish();
    return send_bytes(frame);
  }
  wire::ResultView one(const wire::RequestView& r) {
    auto v = send({r});
    return v.empty() ? wire::ResultView{} : v[0];
  }
  // Raw bytes in; the results of the first answer frame out (views into kept bytes).
  std::vector<wire::ResultView> send_bytes(const std::string& bytes) {
    auto pump = std::make_shared<Pump>();
    pump->session = session_;
    pump->batcher = node_.batcher.get();
    pump->in = bytes;
    auto done = pump->done.get_future();
    asio::post(node_.io, [pump] { pump->step(); });
    done.get();
    last_ = pump->last;
    out_.clear();
    out_.swap(session_->output());
    std::vector<wire::ResultView> results;
    if (out_.size() < 4) return results;
    wire::ServerFrameView f;
    if (!wire::decode_server_frame(std::string_view(out_).substr(4, read_length(out_.data())), f)) {
      ADD_FAILURE() << "malformed answer frame";
      return results;
    }
    for (auto r : f.results) {
      wire::ResultView v;
      EXPECT_TRUE(wire::decode_result(r, v));
      results.push_back(v);
    }
    return results;
  }
  const ProcessResult& last() const { return last_; }

 private:
  struct Pump : BatchWaiter, std::enable_shared_from_this<Pump> {
    std::shared_ptr<NativeSession> session;
    IoBatcher* batcher = nullptr;
    std::string in;
    size_t pos = 0;
    ProcessResult last;
    std::promise<void> done;
    void step() {
      while (true) {
        last = session->process(in.data() + pos, in.size() - pos, batcher->current());
        pos += last.consumed;
        if (last.submitted) return batcher->join(shared_from_this());
        if (last.close || last.stalled || last.consumed == 0 || pos == in.size()) {
          return done.set_value();
        }
      }
    }
    void batch_complete(Flight& f) override {
      session->complete(f);
      if (last.close || pos == in.size()) return done.set_value();
      step();
    }
  };
  TestNode& node_;
  std::shared_ptr<NativeSession> session_;
  ProcessResult last_;
  std::string out_;
};

// A hand-made routing snapshot: `self` among `nodes` (ids n1, n2, ... with RESP ports
// 7001, ... and native ports 8001, ...), slot s owned by owner_of(s); served here: the
// slots this node owns, except `awaiting` ones.
inline std::shared_ptr<Routing> make_routing(int self, int nodes,
                                             const std::function<int(uint32_t)>& owner_of,
                                             const SlotBits& awaiting = {}) {
  auto r = std::make_shared<Routing>();
  r->epoch = 7;
  for (int i = 0; i < nodes; ++i) {
    RouteNode n;
    n.id = "n" + std::to_string(i + 1);
    n.resp_host = "127.0.0.1";
    n.resp_port = 7001 + i;
    n.native_port = 8001 + i;
    n.peer_addr = "127.0.0.1:" + std::to_string(17001 + i);
    n.self = i == self;
    n.in_table = true;
    r->nodes.push_back(n);
  }
  r->self_index = self;
  int run_owner = -1;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    const int o = owner_of(s);
    r->owner[s] = static_cast<uint16_t>(o);
    if (o == self && !awaiting.test(s)) r->serving.set(s);
    if (o != run_owner) {
      r->ranges.push_back({s, s, static_cast<uint16_t>(o)});
      run_owner = o;
    } else {
      r->ranges.back().last = s;
    }
  }
  r->awaiting = awaiting;
  return r;
}

// Two in-process nodes, n1 and n2 (as make_routing names them), splitting the slots by
// `owner_of` (0: n1, 1: n2), each serving its own except n1's `n1_awaiting`, forwarding to
// each other through memory.
class TwoNodes {
 public:
  explicit TwoNodes(const std::function<int(uint32_t)>& owner_of, const SlotBits& n1_awaiting = {})
      : owner_of_(owner_of) {
    SlotBits mine, theirs;
    for (uint32_t s = 0; s < kSlotCount; ++s) {
      if (owner_of(s) == 1) {
        theirs.set(s);
      } else if (!n1_awaiting.test(s)) {
        mine.set(s);
      }
    }
    n1.serve(mine);
    n2.serve(theirs);
    n1.publish(make_routing(0, 2, owner_of, n1_awaiting));
    n2.publish(make_routing(1, 2, owner_of));
    net.attach("127.0.0.1:17001", &n1);
    net.attach("127.0.0.1:17002", &n2);
  }
  // n1's routing as it is when both nodes are healthy and its state has arrived.
  std::shared_ptr<Routing> healthy() const { return make_routing(0, 2, owner_of_); }

  ManualClock clock{1'000'000'000'000};
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  MemoryForwarder net;
  TestNode n1{sys, clock, true, &net};
  TestNode n2{sys, clock, true, &net};

 private:
  std::function<int(uint32_t)> owner_of_;
};

// A key whose slot falls in [lo, hi], with `prefix`.
inline std::string key_in(uint32_t lo, uint32_t hi, const std::string& prefix = "k") {
  for (int i = 0;; ++i) {
    std::string k = prefix + std::to_string(i);
    const uint32_t s = key_slot(k);
    if (s >= lo && s <= hi) return k;
  }
}

}  // namespace fg
