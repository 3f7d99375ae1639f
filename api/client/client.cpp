// The client's machinery, all on one I/O thread: calls are queued per connection and
// leave as one frame per write (batching), several frames ride a connection at once
// (pipelining), answers are matched to calls by order. Routing follows the topology the
// nodes send (answers to TOPOLOGY, pushes on change, MOVED); calls that meet a moving slot,
// a failover or a broken connection are retried until their deadline.
#include "floodgate/client.hpp"

#include <asio.hpp>
#include <atomic>
#include <cstring>
#include <ctime>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "key_slot.hpp"
#include "native.pb.h"
#include "native_wire.hpp"

namespace floodgate {

namespace pb = floodgate::native;
using Clock = std::chrono::steady_clock;
using Done = std::function<void(Status, const std::string&, const fg::wire::ResultView*)>;

std::string_view status_name(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kError:
      return "error";
    case Status::kWrongType:
      return "wrongtype";
    case Status::kUnavailable:
      return "unavailable";
    case Status::kTimeout:
      return "timeout";
    case Status::kNotReplicated:
      return "notreplicated";
    case Status::kKeyLimit:
      return "keylimit";
    case Status::kNoAuth:
      return "noauth";
    case Status::kUnsupported:
      return "unsupported";
  }
  return "?";
}

namespace {

constexpr size_t kMaxFrame = 16 << 20;
constexpr auto kTick = std::chrono::milliseconds(5);

constexpr uint32_t kNoSlot = 0xffffffff;

// Deadlines need milliseconds, not nanoseconds: the coarse clock is several times cheaper.
Clock::time_point coarse_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

struct Call {
  std::string req;          // the encoded pb::Request
  uint32_t slot = kNoSlot;  // kNoSlot: not known yet (or not keyed)
  bool keyed = false;
  std::string addr;  // set: goes to this node address (fan-out, topology)
  Clock::time_point deadline;
  int attempts = 0;
  bool finished = false;
  bool no_retry = false;  // a question for one node (topology, fan-out): fail, do not wait
  // Who hears the answer: most calls want a Decision or a number; the rest see the result.
  enum class Want : uint8_t { kDecision, kValue, kRaw } want = Want::kRaw;
  Callback<Decision> on_decision;
  Callback<int64_t> on_value;
  Done done;
};
using CallPtr = std::shared_ptr<Call>;

Status status_of(int code) {
  switch (code) {
    case pb::OK:
      return Status::kOk;
    case pb::WRONGTYPE:
      return Status::kWrongType;
    case pb::MOVED:
    case pb::TRYAGAIN:
    case pb::CLUSTERDOWN:
      return Status::kUnavailable;
    case pb::NOTREPLICATED:
      return Status::kNotReplicated;
    case pb::OOM:
      return Status::kKeyLimit;
    case pb::NOAUTH:
      return Status::kNoAuth;
    case pb::UNSUPPORTED:
      return Status::kUnsupported;
    default:
      return Status::kError;
  }
}

using fg::wire::put_varint;
using fg::wire::varint_size;
void put_varint(std::string& out, uint64_t v) {
  char buf[10];
  out.append(buf, static_cast<size_t>(put_varint(buf, v) - buf));
}

// Requests are written straight in the wire format of native.proto's Request (no message
// objects on the hot path), by the same codec the node reads them with.
struct Req {
  pb::Op op = pb::OP_UNKNOWN;
  std::string_view key;
  const Limit* limit = nullptr;
  bool has_cost = false;
  int64_t cost = 1;
  int64_t ttl_ms = 0;
  uint64_t lease = 0;
  std::string_view holder;

  std::string encode() const {
    fg::wire::RequestView v;
    v.op = op;
    v.key = key;
    if (limit && limit->kind == Limit::Kind::kPolicy) v.policy = limit->name;
    if (limit && limit->kind != Limit::Kind::kPolicy) {
      v.has_limit = true;
      v.kind = static_cast<int>(limit->kind);  // the same numbers as native.proto's Kind
      v.a = limit->a;
      v.b = limit->b;
      v.period_ms = limit->period_ms;
    }
    v.has_cost = has_cost;
    v.cost = cost;
    v.ttl_ms = ttl_ms;
    v.lease = lease;
    v.holder = holder;
    return fg::wire::encode_request(v);
  }
};

Decision decision_of(const fg::wire::ResultView& r) {
  Decision d;
  d.allowed = r.allowed;
  d.limit = r.limit;
  d.remaining = r.remaining;
  d.retry_after_ms = r.retry_after_ms;
  d.reset_after_ms = r.reset_after_ms;
  d.unavailable = std::string(r.unavailable);
  return d;
}

bool split_addr(const std::string& a, std::string& host, std::string& port) {
  const size_t c = a.rfind(':');
  if (c == std::string::npos || c == 0 || c + 1 == a.size()) return false;
  host = a.substr(0, c);
  port = a.substr(c + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return true;
}

}  // namespace

class Client::Impl {
 public:
  struct Conn;

  explicit Impl(Options o) : opt_(std::move(o)), guard_(asio::make_work_guard(io_)), tick_(io_) {
    if (opt_.connections_per_node < 1) opt_.connections_per_node = 1;
    if (opt_.max_batch < 1) opt_.max_batch = 1;
    if (opt_.max_frames_in_flight < 1) opt_.max_frames_in_flight = 1;
    thread_ = std::thread([this] { io_.run(); });
    thread_id_ = thread_.get_id();
  }

  ~Impl() {
    guard_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
    // Whatever was still open is answered now, on this thread.
    std::vector<CallPtr> open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open.swap(incoming_);
    }
    for (auto& c : waiting_) open.push_back(c);
    for (auto& [at, c] : retry_) open.push_back(c);
    for (auto& [addr, pool] : conns_) {
      for (auto& conn : pool) collect(*conn, open);
    }
    for (auto& c : open) finish(c, Status::kUnavailable, "the client was closed", nullptr);
  }

  bool on_io_thread() const { return std::this_thread::get_id() == thread_id_; }

  CallPtr make(const Req& r) {
    auto c = std::make_shared<Call>();
    c->req = r.encode();
    c->keyed = !r.key.empty() || r.op <= pb::CANCEL;
    // A standalone node needs no slot: skip the CRC until a cluster is seen.
    if (c->keyed && cluster_.load(std::memory_order_relaxed)) c->slot = fg::key_slot(r.key);
    c->deadline = coarse_now() + opt_.deadline;
    requests_.fetch_add(1, std::memory_order_relaxed);
    return c;
  }
  CallPtr make(const Req& r, Done done) {
    CallPtr c = make(r);
    c->done = std::move(done);
    return c;
  }

  // From any thread.
  void submit(CallPtr c) {
    if (on_io_thread()) return dispatch(std::move(c));
    bool post = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming_.push_back(std::move(c));
      if (!wake_posted_) post = wake_posted_ = true;
    }
    if (post) {
      asio::post(io_, [this] {
        std::vector<CallPtr> batch;
        {
          std::lock_guard<std::mutex> lock(mu_);
          batch.swap(incoming_);
          wake_posted_ = false;
        }
        for (auto& c : batch) dispatch(std::move(c));
      });
    }
  }

  // Addresses of the nodes that own slots now (fan-out targets); runs `then` on the I/O
  // thread once the topology is known (or with none when it cannot be learned in time).
  void with_members(std::function<void(std::vector<std::string>)> then) {
    asio::post(io_, [this, then = std::move(then)]() mutable {
      if (have_topology_) return then(members());
      members_waiting_.emplace_back(Clock::now() + opt_.deadline, std::move(then));
      refresh();
      arm_tick();
    });
  }

  Client::Stats stats() const {
    Client::Stats s;
    s.requests = requests_.load();
    s.frames = frames_.load();
    s.retries = retries_.load();
    s.redirects = redirects_.load();
    s.reconnects = reconnects_.load();
    return s;
  }

  void get_topology(Callback<Topology> cb) {
    asio::post(io_, [this, cb = std::move(cb)]() mutable {
      if (have_topology_) return cb(Result<Topology>(topo_));
      topology_waiting_.emplace_back(Clock::now() + opt_.deadline, std::move(cb));
      refresh();
      arm_tick();
    });
  }

  Options opt_;

 private:
  friend struct Conn;

  void collect(Conn& conn, std::vector<CallPtr>& out);

  void finish(const CallPtr& c, Status s, const std::string& error, const fg::wire::ResultView* r) {
    if (c->finished) return;
    c->finished = true;
    switch (c->want) {
      case Call::Want::kDecision:
        if (s != Status::kOk || !r) return c->on_decision(Result<Decision>(s, error));
        return c->on_decision(Result<Decision>(decision_of(*r)));
      case Call::Want::kValue:
        if (s != Status::kOk || !r) return c->on_value(Result<int64_t>(s, error));
        return c->on_value(Result<int64_t>(r->value));
      case Call::Want::kRaw:
        return c->done(s, error, r);
    }
  }

  std::vector<std::string> members() const {
    std::vector<std::string> out;
    if (!topo_.cluster) {
      out.push_back(standalone_addr_);
      return out;
    }
    for (const auto& n : topo_.nodes) {
      if (n.in_table && (n.state == "alive" || n.state == "suspect") && n.port > 0) {
        out.push_back(n.host + ":" + std::to_string(n.port));
      }
    }
    return out;
  }

  // Where a call goes now; empty when nobody can take it yet.
  std::string target(const Call& c) const {
    if (!c.addr.empty()) return c.addr;
    if (!topo_.cluster) return standalone_addr_;
    if (!c.keyed || c.slot == kNoSlot) {  // (a slot not known yet: the node says MOVED)
      auto m = members();
      return m.empty() ? std::string() : m[0];
    }
    const int owner = owner_[c.slot];
    if (owner < 0 || owner >= static_cast<int>(addrs_.size())) return {};
    return addrs_[static_cast<size_t>(owner)];
  }

  void dispatch(CallPtr c) {
    if (c->finished) return;
    if (c->attempts > 0 && coarse_now() >= c->deadline) {
      return finish(c, Status::kUnavailable,
                    last_error_.empty() ? "no node answered before the deadline" : last_error_,
                    nullptr);
    }
    if (!have_topology_ && c->addr.empty()) {
      waiting_.push_back(std::move(c));
      refresh();
      arm_tick();
      return;
    }
    if (c->addr.empty() && (!topo_.cluster || c->slot != kNoSlot)) {
      // The common case: straight to the owner's connection pool.
      const int owner = topo_.cluster ? owner_[c->slot] : 0;
      if (owner >= 0 && static_cast<size_t>(owner) < node_pools_.size() && node_pools_[owner]) {
        return send_node(static_cast<size_t>(owner), std::move(c));
      }
      return retry_later(std::move(c), "CLUSTERDOWN Hash slot not served");
    }
    const std::string addr = target(*c);
    if (addr.empty()) return retry_later(std::move(c), "CLUSTERDOWN Hash slot not served");
    send_to(addr, std::move(c));
  }

  void retry_later(CallPtr c, const std::string& why) {
    if (c->finished) return;
    if (c->no_retry) return finish(c, Status::kUnavailable, why, nullptr);
    last_error_ = why;
    ++c->attempts;
    retries_.fetch_add(1, std::memory_order_relaxed);
    const auto delay = std::chrono::milliseconds(std::min(200, 5 << std::min(c->attempts, 6)));
    const auto at = Clock::now() + delay;
    if (at >= c->deadline) {
      const Status s = why.rfind("TIMEOUT", 0) == 0 ? Status::kTimeout : Status::kUnavailable;
      return finish(c, s, why, nullptr);
    }
    retry_.emplace(at, std::move(c));
    refresh();
    arm_tick();
  }

  Conn& pool(const std::string& addr);
  std::vector<std::shared_ptr<Conn>>& pool_of(const std::string& addr);
  void send_to(const std::string& addr, CallPtr c);
  void send_node(size_t index, CallPtr c);

  // Answers from a connection, in order.
  void on_result(CallPtr c, const fg::wire::ResultView& r) {
    if (c->finished) return;
    switch (r.code) {
      case pb::MOVED: {
        redirects_.fetch_add(1, std::memory_order_relaxed);
        // Follow the redirection at once if we know the node; learn the new table anyway.
        for (size_t i = 0; i < ids_.size(); ++i) {
          if (ids_[i] == r.node && c->keyed && r.slot < fg::kSlotCount) {
            owner_[r.slot] = static_cast<int>(i);
          }
        }
        if (c->keyed && r.slot < fg::kSlotCount) c->slot = r.slot;
        refresh();
        if (++c->attempts > 16) return retry_later(std::move(c), std::string(r.error));
        return dispatch(std::move(c));
      }
      case pb::TRYAGAIN:
      case pb::CLUSTERDOWN:
        return retry_later(std::move(c), std::string(r.error));
      default:
        return finish(c, status_of(r.code), std::string(r.error), &r);
    }
  }

  void on_broken(const std::string& addr, std::vector<CallPtr> calls, const std::string& why) {
    reconnects_.fetch_add(1, std::memory_order_relaxed);
    down_until_[addr] = Clock::now() + std::chrono::milliseconds(100);
    for (auto& c : calls) retry_later(std::move(c), "TIMEOUT " + addr + ": " + why);
    refresh();
  }

  void on_topology(const pb::Topology& t, const std::string& from) {
    if (t.cluster() && have_topology_ && topo_.cluster && t.epoch() < topo_.epoch) return;
    Topology nt;
    nt.cluster = t.cluster();
    nt.epoch = t.epoch();
    nt.quorum = t.quorum();
    for (const auto& n : t.nodes()) {
      nt.nodes.push_back({n.id(), n.host(), static_cast<int>(n.port()),
                          static_cast<int>(n.resp_port()), n.state(), n.in_table()});
    }
    for (const auto& r : t.ranges()) {
      TopologyRange tr{
          static_cast<int>(r.first()), static_cast<int>(r.last()), static_cast<int>(r.owner()), {}};
      for (auto x : r.replicas()) tr.replicas.push_back(static_cast<int>(x));
      nt.ranges.push_back(std::move(tr));
    }
    topo_ = std::move(nt);
    cluster_.store(topo_.cluster, std::memory_order_relaxed);
    if (!topo_.cluster) standalone_addr_ = from;
    owner_.assign(fg::kSlotCount, -1);
    ids_.clear();
    addrs_.clear();
    for (const auto& n : topo_.nodes) {
      ids_.push_back(n.id);
      addrs_.push_back(n.port > 0 ? n.host + ":" + std::to_string(n.port) : std::string());
    }
    for (const auto& r : topo_.ranges)
      for (int s = r.first; s <= r.last && s < static_cast<int>(fg::kSlotCount); ++s)
        owner_[static_cast<size_t>(s)] = r.owner;
    have_topology_ = true;
    node_pools_.clear();
    if (!topo_.cluster) {
      node_pools_.push_back(&pool_of(standalone_addr_));
    } else {
      for (const auto& a : addrs_) node_pools_.push_back(a.empty() ? nullptr : &pool_of(a));
    }
    node_rr_.assign(node_pools_.size(), 0);
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting) dispatch(std::move(c));
    auto tw = std::move(topology_waiting_);
    topology_waiting_.clear();
    for (auto& [at, cb] : tw) cb(Result<Topology>(topo_));
    auto mw = std::move(members_waiting_);
    members_waiting_.clear();
    for (auto& [at, cb] : mw) cb(members());
  }

  // Asks some node for the topology (at most one question at a time, and not too often).
  void refresh() {
    const auto now = Clock::now();
    if (refreshing_ || now - last_refresh_ < std::chrono::milliseconds(20)) {
      refresh_wanted_ = true;
      return;
    }
    refreshing_ = true;
    refresh_wanted_ = false;
    last_refresh_ = now;
    // Candidates: the nodes of the table we know (rotating), then the seeds.
    std::vector<std::string> cands;
    for (const auto& a : members()) cands.push_back(a);
    for (const auto& s : opt_.seeds) cands.push_back(s);
    std::vector<std::string> up;
    for (const auto& a : cands) {
      auto it = down_until_.find(a);
      if (it == down_until_.end() || it->second <= now) up.push_back(a);
    }
    if (up.empty()) up = cands;
    if (up.empty()) {
      refreshing_ = false;
      return;
    }
    const std::string addr = up[refresh_rr_++ % up.size()];
    Req r;
    r.op = pb::TOPOLOGY;
    auto c = std::make_shared<Call>();
    c->req = r.encode();
    c->addr = addr;
    c->deadline = now + std::chrono::milliseconds(1000);
    c->done = [this, addr](Status s, const std::string& e, const fg::wire::ResultView* res) {
      refreshing_ = false;
      if (s != Status::kOk) last_error_ = addr + ": " + e;
      if (s == Status::kOk && res && res->has_topology) {
        pb::Topology t;
        if (t.ParseFromArray(res->topology.data(), static_cast<int>(res->topology.size()))) {
          on_topology(t, addr);
        }
      } else if (s == Status::kNoAuth) {
        // Retrying cannot help: every call waiting for the topology gets the node's answer.
        fail_waiting(s, e);
      } else {
        down_until_[addr] = Clock::now() + std::chrono::milliseconds(100);
        refresh_wanted_ = true;
        last_refresh_ = {};
      }
      if (refresh_wanted_) {
        refresh_wanted_ = false;
        arm_tick();
      }
    };
    // A refresh answered by a broken connection is not retried: the next one asks another.
    c->no_retry = true;
    send_to(addr, std::move(c));
  }

  void fail_waiting(Status s, const std::string& e) {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting) finish(c, s, e, nullptr);
    auto tw = std::move(topology_waiting_);
    topology_waiting_.clear();
    for (auto& [at, cb] : tw) cb(Result<Topology>(s, e));
    auto mw = std::move(members_waiting_);
    members_waiting_.clear();
    for (auto& [at, cb] : mw) cb({});
  }

  void arm_tick() {
    if (tick_armed_) return;
    tick_armed_ = true;
    tick_.expires_after(kTick);
    tick_.async_wait([this](asio::error_code ec) {
      tick_armed_ = false;
      if (ec) return;
      on_tick();
    });
  }

  void on_tick();

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  asio::steady_timer tick_;
  bool tick_armed_ = false;
  std::thread thread_;
  std::thread::id thread_id_;

  std::mutex mu_;
  std::vector<CallPtr> incoming_;
  bool wake_posted_ = false;

  std::map<std::string, std::vector<std::shared_ptr<Conn>>> conns_;
  std::map<std::string, size_t> rr_;
  std::map<std::string, Clock::time_point> down_until_;
  Topology topo_;
  bool have_topology_ = false;
  std::string standalone_addr_;
  std::vector<int> owner_ = std::vector<int>(fg::kSlotCount, -1);
  std::vector<std::string> ids_, addrs_;
  std::vector<std::vector<std::shared_ptr<Conn>>*> node_pools_;  // by topology node index
  std::vector<size_t> node_rr_;
  std::atomic<bool> cluster_{true};
  std::vector<CallPtr> waiting_;
  std::multimap<Clock::time_point, CallPtr> retry_;
  std::vector<std::pair<Clock::time_point, Callback<Topology>>> topology_waiting_;
  std::vector<std::pair<Clock::time_point, std::function<void(std::vector<std::string>)>>>
      members_waiting_;
  bool refreshing_ = false, refresh_wanted_ = false;
  Clock::time_point last_refresh_{};
  size_t refresh_rr_ = 0;
  std::string last_error_;

  std::atomic<uint64_t> requests_{0}, frames_{0}, retries_{0}, redirects_{0}, reconnects_{0};
};

// One TCP connection to one node.
struct Client::Impl::Conn : std::enable_shared_from_this<Conn> {
  struct Flight {
    std::vector<CallPtr> calls;
    Clock::time_point sent;
  };

  Conn(Impl& impl, std::string addr)
      : impl(impl), addr(std::move(addr)), sock(impl.io_), resolver(impl.io_) {}

  // Calls made during one turn of the I/O loop (say, by the callbacks of one answer
  // frame) leave together in one frame.
  void send(CallPtr c) {
    pending.push_back(std::move(c));
    if (state == kIdle) return connect_soon();
    if (state != kUp || flush_posted || writing) return;
    flush_posted = true;
    asio::post(impl.io_, [self = shared_from_this(), g = gen] {
      self->flush_posted = false;
      if (self->gen == g) self->flush();
    });
  }

  // Reconnects to a node that just failed wait a little longer each time (up to 1 s), so a
  // dead node costs a connection attempt now and then, not one per retried call.
  void connect_soon() {
    const auto now = coarse_now();
    if (now >= next_connect) return connect();
    state = kConnecting;
    timer.expires_at(next_connect);
    timer.async_wait([self = shared_from_this(), g = gen](asio::error_code ec) {
      if (ec || self->gen != g) return;
      self->connect();
    });
  }

  void connect() {
    state = kConnecting;
    std::string host, port;
    if (!split_addr(addr, host, port)) return broken("bad address (expected host:port)");
    auto self = shared_from_this();
    const uint64_t g = gen;
    resolver.async_resolve(
        host, port, [self, g](asio::error_code ec, asio::ip::tcp::resolver::results_type res) {
          if (self->gen != g) return;
          if (ec) return self->broken(ec.message());
          asio::async_connect(self->sock, res,
                              [self, g](asio::error_code ec2, const asio::ip::tcp::endpoint&) {
                                if (self->gen != g) return;
                                if (ec2) return self->broken(ec2.message());
                                asio::error_code ignored;
                                self->sock.set_option(asio::ip::tcp::no_delay(true), ignored);
                                self->state = kUp;
                                self->backoff = std::chrono::milliseconds(0);
                                self->hello_sent = false;
                                self->read();
                                self->flush();
                              });
        });
  }

  void flush() {
    if (state != kUp || writing || pending.empty() ||
        flights.size() >= impl.opt_.max_frames_in_flight)
      return;
    body.assign(4, '\0');        // the frame's length, filled in below
    body.append("\x08\x01", 2);  // version = 1
    if (!hello_sent) {
      pb::Hello h;
      h.set_client_name(impl.opt_.name);
      h.set_password(impl.opt_.password);
      h.set_watch_topology(true);
      const std::string hb = h.SerializeAsString();
      body.push_back(0x12);
      put_varint(body, hb.size());
      body.append(hb);
      hello_sent = true;
    }
    Flight f;
    f.sent = coarse_now();
    size_t need = 0;
    const size_t n_calls = std::min(pending.size(), impl.opt_.max_batch);
    for (size_t i = 0; i < n_calls; ++i)
      need += 1 + varint_size(pending[i]->req.size()) + pending[i]->req.size();
    size_t at = body.size();
    body.resize(at + need);
    char* p = body.data() + at;
    for (size_t i = 0; i < n_calls; ++i) {
      CallPtr c = std::move(pending.front());
      pending.pop_front();
      if (c->finished) continue;
      *p++ = 0x1a;  // field 3 (requests), length-delimited
      p = put_varint(p, c->req.size());
      std::memcpy(p, c->req.data(), c->req.size());
      p += c->req.size();
      f.calls.push_back(std::move(c));
    }
    body.resize(static_cast<size_t>(p - body.data()));
    if (f.calls.empty()) return;
    const size_t n = body.size() - 4;
    body[0] = static_cast<char>(n >> 24);
    body[1] = static_cast<char>(n >> 16);
    body[2] = static_cast<char>(n >> 8);
    body[3] = static_cast<char>(n);
    wbuf.swap(body);
    flights.push_back(std::move(f));
    impl.frames_.fetch_add(1, std::memory_order_relaxed);
    writing = true;
    auto self = shared_from_this();
    const uint64_t g = gen;
    asio::async_write(sock, asio::buffer(wbuf), [self, g](asio::error_code ec, size_t) {
      if (self->gen != g) return;
      self->writing = false;
      if (ec) return self->broken(ec.message());
      self->flush();
    });
  }

  void read() {
    if (rbuf.size() - rend < 4096) {
      if (rbeg > 0) {
        std::memmove(rbuf.data(), rbuf.data() + rbeg, rend - rbeg);
        rend -= rbeg;
        rbeg = 0;
      }
      if (rbuf.size() - rend < 4096) rbuf.resize(rbuf.size() * 2);
    }
    auto self = shared_from_this();
    const uint64_t g = gen;
    sock.async_read_some(asio::buffer(rbuf.data() + rend, rbuf.size() - rend),
                         [self, g](asio::error_code ec, size_t n) {
                           if (self->gen != g) return;
                           if (ec) return self->broken(ec.message());
                           self->rend += n;
                           if (!self->parse()) return;
                           self->read();
                         });
  }

  bool parse() {
    while (rend - rbeg >= 4) {
      const auto* u = reinterpret_cast<const unsigned char*>(rbuf.data() + rbeg);
      const size_t n = (size_t{u[0]} << 24) | (size_t{u[1]} << 16) | (size_t{u[2]} << 8) | u[3];
      if (n > kMaxFrame) {
        broken("frame too large");
        return false;
      }
      if (rend - rbeg - 4 < n) {
        if (rbuf.size() < n + 4 + 4096) rbuf.resize(n + 4 + 4096);
        break;
      }
      if (!fg::wire::decode_server_frame(std::string_view(rbuf.data() + rbeg + 4, n), frame)) {
        broken("malformed frame from the node");
        return false;
      }
      rbeg += 4 + n;
      if (frame.push) {
        pb::Topology t;
        if (frame.has_topology &&
            t.ParseFromArray(frame.topology.data(), static_cast<int>(frame.topology.size()))) {
          impl.on_topology(t, addr);
        }
        continue;
      }
      if (flights.empty()) {
        broken("an answer nobody asked for");
        return false;
      }
      Flight f = std::move(flights.front());
      flights.pop_front();
      auto self = shared_from_this();  // on_result may break this connection
      for (size_t i = 0; i < f.calls.size(); ++i) {
        if (i < frame.results.size() && fg::wire::decode_result(frame.results[i], result)) {
          impl.on_result(std::move(f.calls[i]), result);
        } else {
          impl.finish(f.calls[i], Status::kError, "the node's answer had fewer results", nullptr);
        }
      }
      if (state != kUp) return false;
    }
    if (rbeg == rend) rbeg = rend = 0;
    flush();
    return true;
  }

  void broken(const std::string& why) {
    if (state == kIdle) return;
    state = kIdle;
    ++gen;  // handlers of the old socket find this and do nothing
    backoff = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(1000), std::max(backoff * 2, std::chrono::milliseconds(20)));
    next_connect = coarse_now() + backoff;
    timer.cancel();
    asio::error_code ec;
    sock.close(ec);
    sock = asio::ip::tcp::socket(impl.io_);
    rbeg = rend = 0;
    writing = false;
    std::vector<CallPtr> calls;
    for (auto& f : flights)
      for (auto& c : f.calls) calls.push_back(std::move(c));
    flights.clear();
    for (auto& c : pending) calls.push_back(std::move(c));
    pending.clear();
    impl.on_broken(addr, std::move(calls), why);
  }

  Impl& impl;
  std::string addr;
  asio::ip::tcp::socket sock;
  asio::ip::tcp::resolver resolver;
  enum State { kIdle, kConnecting, kUp } state = kIdle;
  std::deque<CallPtr> pending;
  std::deque<Flight> flights;
  std::string body, wbuf;
  asio::steady_timer timer{impl.io_};
  Clock::time_point next_connect{};
  std::chrono::milliseconds backoff{0};
  bool writing = false;
  bool flush_posted = false;
  bool hello_sent = false;
  uint64_t gen = 0;
  std::vector<char> rbuf = std::vector<char>(64 * 1024);
  size_t rbeg = 0, rend = 0;
  fg::wire::ServerFrameView frame;
  fg::wire::ResultView result;
};

void Client::Impl::collect(Conn& conn, std::vector<CallPtr>& out) {
  for (auto& f : conn.flights)
    for (auto& c : f.calls) out.push_back(c);
  for (auto& c : conn.pending) out.push_back(c);
}

std::vector<std::shared_ptr<Client::Impl::Conn>>& Client::Impl::pool_of(const std::string& addr) {
  auto& p = conns_[addr];
  if (p.empty()) {
    for (int i = 0; i < opt_.connections_per_node; ++i)
      p.push_back(std::make_shared<Conn>(*this, addr));
  }
  return p;
}

Client::Impl::Conn& Client::Impl::pool(const std::string& addr) {
  auto& p = pool_of(addr);
  return *p[rr_[addr]++ % p.size()];
}

void Client::Impl::send_to(const std::string& addr, CallPtr c) { pool(addr).send(std::move(c)); }

void Client::Impl::send_node(size_t index, CallPtr c) {
  auto& p = *node_pools_[index];
  p[node_rr_[index]++ % p.size()]->send(std::move(c));
}

void Client::Impl::on_tick() {
  const auto now = Clock::now();
  // Retries that are due.
  std::vector<CallPtr> due;
  while (!retry_.empty() && retry_.begin()->first <= now) {
    due.push_back(std::move(retry_.begin()->second));
    retry_.erase(retry_.begin());
  }
  for (auto& c : due) dispatch(std::move(c));
  // Calls waiting for a first topology, past their deadline.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->deadline <= now) {
      finish(*it, Status::kUnavailable, "no seed answered: " + last_error_, nullptr);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = topology_waiting_.begin(); it != topology_waiting_.end();) {
    if (it->first <= now) {
      it->second(Result<Topology>(Status::kUnavailable, "no node answered: " + last_error_));
      it = topology_waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = members_waiting_.begin(); it != members_waiting_.end();) {
    if (it->first <= now) {
      it->second({});
      it = members_waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // A connection whose oldest frame has gone unanswered too long is to a node that is
  // paused or gone: break it, so its calls go elsewhere once the cluster has failed over.
  const auto stall =
      std::max<std::chrono::milliseconds>(std::chrono::milliseconds(500), opt_.deadline / 4);
  bool busy = false;
  std::vector<std::shared_ptr<Conn>> stuck;
  for (auto& [addr, p] : conns_) {
    for (auto& conn : p) {
      if (conn->flights.empty()) continue;
      busy = true;
      if (now - conn->flights.front().sent > stall) stuck.push_back(conn);
    }
  }
  for (auto& conn : stuck) conn->broken("no answer for " + std::to_string(stall.count()) + " ms");
  if (refresh_wanted_ && !refreshing_) refresh();
  if (busy || !retry_.empty() || !waiting_.empty() || !topology_waiting_.empty() ||
      !members_waiting_.empty() || refresh_wanted_) {
    arm_tick();
  }
}

// ---------------------------------------------------------------------------------------

namespace {

template <class T, class Start>
Result<T> block(Start&& start) {
  std::promise<Result<T>> p;
  auto f = p.get_future();
  start([&p](Result<T> r) { p.set_value(std::move(r)); });
  return f.get();
}

Req keyed(pb::Op op, std::string_view key, const Limit* limit = nullptr) {
  Req r;
  r.op = op;
  r.key = key;
  r.limit = limit;
  return r;
}

void decision_call(Client::Impl& impl, const Req& r, Callback<Decision> cb) {
  CallPtr c = impl.make(r);
  c->want = Call::Want::kDecision;
  c->on_decision = std::move(cb);
  impl.submit(std::move(c));
}

void value_call(Client::Impl& impl, const Req& r, Callback<int64_t> cb) {
  CallPtr c = impl.make(r);
  c->want = Call::Want::kValue;
  c->on_value = std::move(cb);
  impl.submit(std::move(c));
}

Callback<int64_t> as_bool(Callback<bool> cb) {
  return [cb = std::move(cb)](Result<int64_t> r) {
    if (!r.ok()) return cb(Result<bool>(r.status(), r.error()));
    cb(Result<bool>(r.value() != 0));
  };
}

// Sent to every node of the table; the values add up. Any node failing fails the call
// (its part of the holder's leases was not renewed or released).
void fan_out(Client::Impl& impl, pb::Op op, std::string holder, int64_t ttl_ms,
             Callback<int64_t> cb) {
  impl.with_members([&impl, op, holder = std::move(holder), ttl_ms,
                     cb = std::move(cb)](std::vector<std::string> nodes) mutable {
    if (nodes.empty()) return cb(Result<int64_t>(Status::kUnavailable, "no node is reachable"));
    struct Sum {
      size_t left;
      int64_t total = 0;
      Status status = Status::kOk;
      std::string error;
      Callback<int64_t> cb;
    };
    auto sum = std::make_shared<Sum>();
    sum->left = nodes.size();
    sum->cb = std::move(cb);
    Req r;
    r.op = op;
    r.holder = holder;
    r.ttl_ms = ttl_ms;
    for (const auto& addr : nodes) {
      CallPtr c = impl.make(
          r, [sum, addr](Status s, const std::string& e, const fg::wire::ResultView* res) {
            if (s == Status::kOk && res) {
              sum->total += res->value;
            } else if (sum->status == Status::kOk) {
              sum->status = s;
              sum->error = addr + ": " + e;
            }
            if (--sum->left > 0) return;
            if (sum->status != Status::kOk)
              return sum->cb(Result<int64_t>(sum->status, sum->error));
            sum->cb(Result<int64_t>(sum->total));
          });
      c->addr = addr;
      c->no_retry = true;
      impl.submit(std::move(c));
    }
  });
}

}  // namespace

Client::Client(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {}
Client::~Client() = default;

Client::Stats Client::stats() const { return impl_->stats(); }

#define FG_CHECK_THREAD(T)                                                             \
  if (impl_->on_io_thread())                                                           \
    return Result<T>(Status::kError,                                                   \
                     "a blocking call from a client callback would deadlock; use the " \
                     "callback form");

void Client::take(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb) {
  Req r = keyed(pb::TAKE, key, &limit);
  r.has_cost = true;
  r.cost = cost;
  decision_call(*impl_, r, std::move(cb));
}
void Client::peek(std::string_view key, const Limit& limit, int64_t cost, Callback<Decision> cb) {
  Req r = keyed(pb::PEEK, key, &limit);
  r.has_cost = true;
  r.cost = cost;
  decision_call(*impl_, r, std::move(cb));
}
void Client::reset(std::string_view key, Callback<bool> cb) {
  value_call(*impl_, keyed(pb::RESET, key), as_bool(std::move(cb)));
}
void Client::acquire(std::string_view key, const Limit& limit, std::string_view holder,
                     Callback<Lease> cb) {
  Req r = keyed(pb::ACQUIRE, key, &limit);
  r.holder = holder;
  impl_->submit(
      impl_->make(r, [cb = std::move(cb), k = std::string(key)](Status s, const std::string& e,
                                                                const fg::wire::ResultView* res) {
        if (s != Status::kOk || !res) return cb(Result<Lease>(s, e));
        Lease l;
        l.granted = res->allowed;
        l.key = k;
        l.id = res->lease;
        l.held = res->value;
        l.limit = res->limit;
        l.retry_after_ms = res->retry_after_ms;
        cb(Result<Lease>(std::move(l)));
      }));
}
void Client::renew(std::string_view key, uint64_t lease, int64_t ttl_ms, Callback<bool> cb) {
  Req r = keyed(pb::RENEW, key);
  r.lease = lease;
  r.ttl_ms = ttl_ms;
  value_call(*impl_, r, as_bool(std::move(cb)));
}
void Client::release(std::string_view key, uint64_t lease, Callback<bool> cb) {
  Req r = keyed(pb::RELEASE, key);
  r.lease = lease;
  value_call(*impl_, r, as_bool(std::move(cb)));
}
void Client::count(std::string_view key, Callback<int64_t> cb) {
  value_call(*impl_, keyed(pb::COUNT, key), std::move(cb));
}
void Client::heartbeat(std::string_view holder, int64_t ttl_ms, Callback<int64_t> cb) {
  fan_out(*impl_, pb::HEARTBEAT, std::string(holder), ttl_ms, std::move(cb));
}
void Client::release_all(std::string_view holder, Callback<int64_t> cb) {
  fan_out(*impl_, pb::RELEASE_ALL, std::string(holder), 0, std::move(cb));
}

// Reserve every limit (one round, each to its owner); if all allowed, commit every
// reservation; otherwise cancel the ones taken. A caller that dies between the two leaves
// reservations that expire after Options::reservation_ttl and give back what they took.
void Client::check_all(std::vector<Check> checks, Callback<MultiDecision> cb) {
  if (checks.empty()) {
    MultiDecision m;
    m.allowed = true;
    return cb(Result<MultiDecision>(std::move(m)));
  }
  struct State {
    std::vector<Check> checks;
    std::vector<Result<Decision>> results;
    std::vector<uint64_t> tickets;
    size_t left = 0;
    Callback<MultiDecision> cb;
  };
  auto st = std::make_shared<State>();
  st->checks = std::move(checks);
  st->results.resize(st->checks.size());
  st->tickets.assign(st->checks.size(), 0);
  st->left = st->checks.size();
  st->cb = std::move(cb);
  Impl& impl = *impl_;
  const int64_t ttl = std::max<int64_t>(1, impl.opt_.reservation_ttl.count());
  auto second_phase = [&impl, st] {
    MultiDecision m;
    m.allowed = true;
    std::optional<Result<Decision>> error;
    for (const auto& r : st->results) {
      if (!r.ok()) {
        if (!error) error = r;
        m.allowed = false;
        continue;
      }
      m.decisions.push_back(r.value());
      if (!r->allowed) {
        m.allowed = false;
        m.retry_after_ms = std::max(m.retry_after_ms, r->retry_after_ms);
      }
    }
    auto answer = [st, m, error] {
      // A check that could not be made at all is an error, not a denial.
      if (error) return st->cb(Result<MultiDecision>(error->status(), error->error()));
      st->cb(Result<MultiDecision>(m));
    };
    auto pending = std::make_shared<size_t>(0);
    for (uint64_t t : st->tickets) *pending += t != 0;
    const bool commit = m.allowed;
    // Cancels need no wait: if one is lost, its reservation expires all the same.
    if (!commit || *pending == 0) answer();
    for (size_t i = 0; i < st->checks.size(); ++i) {
      if (st->tickets[i] == 0) continue;
      Req r = keyed(commit ? pb::COMMIT : pb::CANCEL, st->checks[i].key);
      r.lease = st->tickets[i];
      impl.submit(impl.make(
          r, [pending, commit, answer](Status, const std::string&, const fg::wire::ResultView*) {
            if (--*pending == 0 && commit) answer();
          }));
    }
  };
  for (size_t i = 0; i < st->checks.size(); ++i) {
    const Check& ch = st->checks[i];
    Req r = keyed(pb::RESERVE, ch.key, &ch.limit);
    r.has_cost = true;
    r.cost = ch.cost;
    r.ttl_ms = ttl;
    impl.submit(impl.make(
        r, [st, i, second_phase](Status s, const std::string& e, const fg::wire::ResultView* res) {
          if (s == Status::kOk && res) {
            st->results[i] = Result<Decision>(decision_of(*res));
            st->tickets[i] = res->lease;
          } else {
            st->results[i] = Result<Decision>(s, e);
          }
          if (--st->left == 0) second_phase();
        }));
  }
}

void Client::topology(Callback<Topology> cb) { impl_->get_topology(std::move(cb)); }

// Blocking forms.
Result<Decision> Client::take(std::string_view key, const Limit& limit, int64_t cost) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>([&](Callback<Decision> cb) { take(key, limit, cost, std::move(cb)); });
}
Result<Decision> Client::peek(std::string_view key, const Limit& limit, int64_t cost) {
  FG_CHECK_THREAD(Decision)
  return block<Decision>([&](Callback<Decision> cb) { peek(key, limit, cost, std::move(cb)); });
}
Result<bool> Client::reset(std::string_view key) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { reset(key, std::move(cb)); });
}
Result<Lease> Client::acquire(std::string_view key, const Limit& limit, std::string_view holder) {
  FG_CHECK_THREAD(Lease)
  return block<Lease>([&](Callback<Lease> cb) { acquire(key, limit, holder, std::move(cb)); });
}
Result<bool> Client::renew(std::string_view key, uint64_t lease, int64_t ttl_ms) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { renew(key, lease, ttl_ms, std::move(cb)); });
}
Result<bool> Client::release(std::string_view key, uint64_t lease) {
  FG_CHECK_THREAD(bool)
  return block<bool>([&](Callback<bool> cb) { release(key, lease, std::move(cb)); });
}
Result<int64_t> Client::count(std::string_view key) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { count(key, std::move(cb)); });
}
Result<int64_t> Client::heartbeat(std::string_view holder, int64_t ttl_ms) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { heartbeat(holder, ttl_ms, std::move(cb)); });
}
Result<int64_t> Client::release_all(std::string_view holder) {
  FG_CHECK_THREAD(int64_t)
  return block<int64_t>([&](Callback<int64_t> cb) { release_all(holder, std::move(cb)); });
}
Result<MultiDecision> Client::check_all(std::vector<Check> checks) {
  FG_CHECK_THREAD(MultiDecision)
  return block<MultiDecision>(
      [&](Callback<MultiDecision> cb) { check_all(std::move(checks), std::move(cb)); });
}
Result<Topology> Client::topology() {
  FG_CHECK_THREAD(Topology)
  return block<Topology>([&](Callback<Topology> cb) { topology(std::move(cb)); });
}

// ---------------------------------------------------------------------------------------
// Holder

struct Holder::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  std::atomic<uint64_t> failed{0};
};

Holder::Holder(Client& client, std::string holder_id, std::chrono::milliseconds ttl)
    : client_(client), id_(std::move(holder_id)), state_(std::make_shared<State>()) {
  const auto every = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(10), ttl / 3);
  const int64_t ttl_ms = ttl.count();
  state_->thread = std::thread([this, every, ttl_ms, st = state_] {
    std::unique_lock<std::mutex> lock(st->mu);
    while (!st->cv.wait_for(lock, every, [&] { return st->stop; })) {
      lock.unlock();
      if (!client_.heartbeat(id_, ttl_ms).ok()) st->failed.fetch_add(1);
      lock.lock();
    }
  });
}

Holder::~Holder() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  client_.release_all(id_);
}

uint64_t Holder::failed_heartbeats() const { return state_->failed.load(); }

Result<Lease> Holder::acquire(std::string_view key, const Limit& limit) {
  return client_.acquire(key, limit, id_);
}
void Holder::acquire(std::string_view key, const Limit& limit, Callback<Lease> cb) {
  client_.acquire(key, limit, id_, std::move(cb));
}
Result<bool> Holder::release(const Lease& lease) { return client_.release(lease.key, lease.id); }
void Holder::release(const Lease& lease, Callback<bool> cb) {
  client_.release(lease.key, lease.id, std::move(cb));
}

}  // namespace floodgate
