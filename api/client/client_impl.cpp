// Routing, retries and topology refreshes of the client.
#include "client_impl.hpp"

#include "connection.hpp"
#include "errors.hpp"

namespace floodgate {

namespace {
constexpr auto kTick = std::chrono::milliseconds(5);
}  // namespace

namespace {
std::unique_ptr<asio::ssl::context> make_tls_context(const Client::Options::Tls& t) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  auto use = [](const char* what, const std::string& file, auto&& load) {
    asio::error_code ec;
    load(ec);
    if (ec)
      throw std::runtime_error("floodgate client: TLS " + std::string(what) + " " + file + ": " +
                               ec.message());
  };
  if (t.ca_cert_file.empty()) {
    asio::error_code ec;
    ctx->set_default_verify_paths(ec);  // the system's CAs
  } else {
    use("CA file", t.ca_cert_file,
        [&](asio::error_code& ec) { ctx->load_verify_file(t.ca_cert_file, ec); });
  }
  if (!t.cert_file.empty()) {
    use("certificate", t.cert_file,
        [&](asio::error_code& ec) { ctx->use_certificate_chain_file(t.cert_file, ec); });
    use("key", t.key_file.empty() ? t.cert_file : t.key_file, [&](asio::error_code& ec) {
      ctx->use_private_key_file(t.key_file.empty() ? t.cert_file : t.key_file,
                                asio::ssl::context::pem, ec);
    });
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}
}  // namespace

Client::Impl::Impl(Options o) : opt_(std::move(o)), guard_(asio::make_work_guard(io_)), tick_(io_) {
  if (opt_.connections_per_node < 1) opt_.connections_per_node = 1;
  if (opt_.max_batch < 1) opt_.max_batch = 1;
  if (opt_.max_frames_in_flight < 1) opt_.max_frames_in_flight = 1;
  if (opt_.tls.enabled) tls_ = make_tls_context(opt_.tls);
  thread_ = std::thread([this] { io_.run(); });
  thread_id_ = thread_.get_id();
}

Client::Impl::~Impl() {
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
    for (auto& conn : pool) conn->collect(open);
  }
  for (auto& c : open) finish(c, Status::kUnavailable, "the client was closed", nullptr);
}

CallPtr Client::Impl::make(const Req& r) {
  CallPtr c = Call::make();
  r.encode(c->req);
  c->keyed =
      !r.key.empty() || (r.op <= pb::CANCEL && r.op != pb::HEARTBEAT && r.op != pb::RELEASE_ALL);
  // A standalone node needs no slot: skip the CRC until a cluster is seen.
  if (c->keyed && cluster_.load(std::memory_order_relaxed)) c->slot = fg::key_slot(r.key);
  c->deadline = coarse_now() + opt_.deadline + std::chrono::milliseconds(r.wait_ms);
  requests_.fetch_add(1, std::memory_order_relaxed);
  return c;
}

CallPtr Client::Impl::make(const Req& r, Done done) {
  CallPtr c = make(r);
  c->done = std::move(done);
  return c;
}

void Client::Impl::submit(CallPtr c) {
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

Client::Stats Client::Impl::stats() const {
  Client::Stats s;
  s.requests = requests_.load();
  s.frames = frames_.load();
  s.retries = retries_.load();
  s.redirects = redirects_.load();
  s.reconnects = reconnects_.load();
  return s;
}

void Client::Impl::get_topology(Callback<Topology> cb) {
  asio::post(io_, [this, cb = std::move(cb)]() mutable {
    if (topo_.known()) return cb(Result<Topology>(topo_.topology()));
    topology_waiting_.emplace_back(Clock::now() + opt_.deadline, std::move(cb));
    refresh();
    arm_tick();
  });
}

void Client::Impl::finish(const CallPtr& c, Status s, const std::string& error,
                          const fg::wire::ResultView* r) {
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

// Where a call goes: its owner's connections; when the owner cannot be reached (declared
// dead, or its connection just broke), another live member with `forward` set, which relays
// it to the owner or answers with the policy's fail mode; a question for one node, there.
void Client::Impl::dispatch(CallPtr c) {
  if (c->finished) return;
  if (c->attempts > 0 && coarse_now() >= c->deadline) {
    return finish(c, c->maybe_counted ? Status::kTimeout : Status::kUnavailable,
                  c->why.empty() ? "no node answered before the deadline" : c->why, nullptr);
  }
  if (!c->addr.empty()) return pool(c->addr).send(std::move(c));
  if (!topo_.known()) {
    waiting_.push_back(std::move(c));
    refresh();
    arm_tick();
    return;
  }
  const auto now = coarse_now();
  // (A call made while only a standalone node was known has no slot: any member routes it.)
  const int owner = !c->keyed            ? -1
                    : !topo_.cluster()   ? 0
                    : c->slot == kNoSlot ? -1
                                         : topo_.owner(c->slot);
  if (owner >= 0 && static_cast<size_t>(owner) < node_pools_.size() && node_pools_[owner] &&
      (!topo_.cluster() || topo_.reachable(static_cast<size_t>(owner), now))) {
    return send_node(static_cast<size_t>(owner), std::move(c));
  }
  // Not keyed (a cluster-wide heartbeat), no owner known, or the owner out of reach.
  const std::string relay = topo_.relay(now);
  if (relay.empty()) return retry_later(std::move(c), fg::err::kClusterDown, false);
  if (c->keyed && !c->via_peer) {
    c->via_peer = true;
    fg::wire::mark_forward(c->req);
  }
  pool(relay).send(std::move(c));
}

void Client::Impl::retry_later(CallPtr c, const std::string& why, bool from_node) {
  if (c->finished) return;
  if (c->no_retry) return finish(c, Status::kUnavailable, why, nullptr);
  last_error_ = why;
  if (from_node || !c->why_from_node) {
    c->why = why;
    c->why_from_node |= from_node;
  }
  ++c->attempts;
  retries_.fetch_add(1, std::memory_order_relaxed);
  const auto delay = std::chrono::milliseconds(std::min(200, 5 << std::min(c->attempts, 6)));
  const auto at = Clock::now() + delay;
  if (at >= c->deadline) {
    return finish(c, c->maybe_counted ? Status::kTimeout : Status::kUnavailable, c->why, nullptr);
  }
  retry_.emplace(at, std::move(c));
  refresh();
  arm_tick();
}

void Client::Impl::on_result(CallPtr c, const fg::wire::ResultView& r) {
  if (c->finished) return;
  switch (r.code) {
    case pb::MOVED:
      redirects_.fetch_add(1, std::memory_order_relaxed);
      // Follow the redirection at once if we know the node; learn the new table anyway.
      if (c->keyed && r.slot < fg::kSlotCount) {
        topo_.moved(r.slot, r.node);
        c->slot = r.slot;
      }
      refresh();
      if (++c->attempts > 16) return retry_later(std::move(c), std::string(r.error), true);
      return dispatch(std::move(c));
    case pb::TRYAGAIN:
    case pb::CLUSTERDOWN:
      return retry_later(std::move(c), std::string(r.error), true);
    default:
      return finish(c, status_of(r.code), std::string(r.error), &r);
  }
}

// A request that went out on a connection that then broke may have been counted: if the
// deadline ends it later, it ends as a timeout, not as "never happened".
void Client::Impl::on_broken(const std::string& addr, std::vector<CallPtr> sent,
                             std::vector<CallPtr> unsent, const std::string& why) {
  reconnects_.fetch_add(1, std::memory_order_relaxed);
  topo_.mark_down(addr, coarse_now());
  for (auto& c : sent) c->maybe_counted = true;
  for (auto* calls : {&sent, &unsent}) {
    for (auto& c : *calls) retry_later(std::move(c), addr + ": " + why, false);
  }
  refresh();
}

void Client::Impl::on_topology(const pb::Topology& t, const std::string& from) {
  if (!topo_.adopt(t, from)) return;
  cluster_.store(topo_.cluster(), std::memory_order_relaxed);
  node_pools_.clear();
  for (size_t i = 0; i < topo_.nodes(); ++i) {
    const std::string& a = topo_.addr(i);
    node_pools_.push_back(a.empty() ? nullptr : &pool_of(a));
  }
  node_rr_.assign(node_pools_.size(), 0);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& c : waiting) dispatch(std::move(c));
  auto tw = std::move(topology_waiting_);
  topology_waiting_.clear();
  for (auto& [at, cb] : tw) cb(Result<Topology>(topo_.topology()));
}

// Asks some node for the topology (at most one question at a time, and not too often).
void Client::Impl::refresh() {
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
  if (topo_.known()) cands = topo_.members();
  for (const auto& s : opt_.seeds) cands.push_back(s);
  std::vector<std::string> up;
  for (const auto& a : cands)
    if (!topo_.down(a, now)) up.push_back(a);
  if (up.empty()) up = cands;
  if (up.empty()) {
    refreshing_ = false;
    return;
  }
  const std::string addr = up[refresh_rr_++ % up.size()];
  Req r;
  r.op = pb::TOPOLOGY;
  CallPtr c = Call::make();
  r.encode(c->req);
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
    } else if (s == Status::kNoAuth || s == Status::kError) {
      // The node refused the hello (a password, a client name): retrying cannot help, so
      // every call waiting for the topology gets the node's answer.
      fail_waiting(s, e);
    } else {
      topo_.mark_down(addr, coarse_now());
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
  pool(addr).send(std::move(c));
}

void Client::Impl::fail_waiting(Status s, const std::string& e) {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& c : waiting) finish(c, s, e, nullptr);
  auto tw = std::move(topology_waiting_);
  topology_waiting_.clear();
  for (auto& [at, cb] : tw) cb(Result<Topology>(s, e));
}

void Client::Impl::arm_tick() {
  if (tick_armed_) return;
  tick_armed_ = true;
  tick_.expires_after(kTick);
  tick_.async_wait([this](asio::error_code ec) {
    tick_armed_ = false;
    if (ec) return;
    on_tick();
  });
}

std::vector<std::shared_ptr<Connection>>& Client::Impl::pool_of(const std::string& addr) {
  auto& p = conns_[addr];
  if (p.empty()) {
    for (int i = 0; i < opt_.connections_per_node; ++i)
      p.push_back(std::make_shared<Connection>(*this, addr));
  }
  return p;
}

Connection& Client::Impl::pool(const std::string& addr) {
  auto& p = pool_of(addr);
  return *p[rr_[addr]++ % p.size()];
}

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
  // A connection whose oldest frame has gone unanswered too long is to a node that is
  // paused or gone: break it, so its calls go elsewhere once the cluster has failed over.
  const auto stall =
      std::max<std::chrono::milliseconds>(std::chrono::milliseconds(500), opt_.deadline / 4);
  bool busy = false;
  std::vector<std::shared_ptr<Connection>> stuck;
  for (auto& [addr, p] : conns_) {
    for (auto& conn : p) {
      Clock::time_point sent;
      if (!conn->oldest(sent)) continue;
      busy = true;
      if (now - sent > stall) stuck.push_back(conn);
    }
  }
  for (auto& conn : stuck) conn->broken("no answer for " + std::to_string(stall.count()) + " ms");
  if (refresh_wanted_ && !refreshing_) refresh();
  if (busy || !retry_.empty() || !waiting_.empty() || !topology_waiting_.empty() ||
      refresh_wanted_) {
    arm_tick();
  }
}

}  // namespace floodgate
