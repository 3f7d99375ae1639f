// The cluster thread: gossip, table agreement, hand-offs, routing snapshots.
#include "cluster.hpp"

#include <spdlog/spdlog.h>

#include <random>

#include "peer.pb.h"
#include "state.pb.h"
#include "state_codec.hpp"

namespace fg {

namespace {
constexpr int64_t kTickMs = 10;
constexpr auto kRetryDelay = std::chrono::milliseconds(200);
constexpr auto kExtractDelay = std::chrono::milliseconds(2);

void split_addr(const std::string& addr, std::string& host, int& port) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    host = addr;
    port = 0;
    return;
  }
  host = addr.substr(0, colon);
  port = std::atoi(addr.c_str() + colon + 1);
}
}  // namespace

struct Cluster::Outgoing {
  std::string to;  // node id
  SlotBits slots;
  uint64_t epoch = 0;
  uint64_t id = 0;
  std::vector<EntrySnapshot> entries;
  std::vector<std::string> chunks;
  size_t next = 0;
  asio::steady_timer retry;
  explicit Outgoing(asio::io_context& io) : retry(io) {}
};

Cluster::Cluster(ClusterConfig cfg, ShardPool& pool)
    : cfg_(std::move(cfg)),
      pool_(pool),
      guard_(asio::make_work_guard(io_)),
      timer_(io_),
      keeper_(cfg_.node_id, cfg_.await_timeout_ms * 1'000'000) {
  if (cfg_.announce_host.empty()) cfg_.announce_host = cfg_.bind_host;
  ReplicatorConfig rc;
  rc.self = cfg_.node_id;
  rc.lag_ms = cfg_.replication_lag_ms;
  rc.timeout_ms = cfg_.sync_timeout_ms;
  rc.chunk_bytes = cfg_.handoff_chunk_bytes;
  replicator_ = std::make_unique<Replicator>(
      rc, pool_, io_, keeper_.held(),
      [this](const std::string& id, std::string body, std::chrono::milliseconds deadline,
             PeerCallback cb) {
        auto it = known_.find(id);
        if (it == known_.end()) return cb(PeerStatus::kUnavailable, {});
        peer(it->second.addr).call(kPeerReplicate, std::move(body), deadline, std::move(cb));
      },
      [this](const std::string& id) { return live(id); });
}

Cluster::~Cluster() { stop(); }

void Cluster::start() {
  const std::string addr = cfg_.announce_host + ":" + std::to_string(cfg_.port);
  const std::string resp_addr = cfg_.announce_host + ":" + std::to_string(cfg_.resp_port);
  transport_ =
      std::make_unique<UdpTransport>(io_, cfg_.bind_host, static_cast<uint16_t>(cfg_.port),
                                     [this](const std::string& from, std::string_view bytes) {
                                       membership_->receive(from, bytes, wall_now_ns());
                                     });
  server_ = std::make_unique<PeerServer>(
      io_, cfg_.bind_host, static_cast<uint16_t>(cfg_.port),
      [this](uint32_t kind, std::string body, PeerServer::Respond respond) {
        dispatch(kind, std::move(body), std::move(respond));
      });
  std::random_device rd;
  membership_ = std::make_unique<Membership>(cfg_.membership, cfg_.node_id, addr, resp_addr,
                                             *transport_, (uint64_t{rd()} << 32) ^ rd());
  membership_->set_native_port(cfg_.native_port);
  agreement_ = std::make_unique<TableAgreement>(*membership_, cfg_.settle_ms * 1'000'000);
  agreement_->set_replicas(cfg_.replicas);
  agreement_->on_change(
      [this](const SlotTable& before, const SlotTable& after) { on_table(before, after); });
  membership_->on_change([this](const Member& m) {
    known_[m.id] = m;
    dirty_ = true;
    // Forwards and replication waiting on a member just declared dead (a paused process, a
    // one-way partition: its connection stays open) end now, not at their deadlines.
    if (!m.live()) {
      auto p = peers_.find(m.addr);
      if (p != peers_.end()) p->second->abort_calls();
    }
    spdlog::info("member {} ({}) is {}", m.id, m.resp_addr, state_name(m.state));
  });
  membership_->on_heard([this](const std::string& id, uint64_t epoch, uint64_t seq) {
    if (seq >= wake_seq_) wake_.on_heard(id, epoch);
  });
  pulse_ns_ = std::make_shared<std::atomic<int64_t>>(wall_now_ns());
  known_[cfg_.node_id] = membership_->self();
  if (book_) start_book_sync();
  publish();
  asio::post(io_, [this] {
    membership_->join(cfg_.seeds, wall_now_ns());
    arm();
    replicator_->start();
  });
  thread_ = std::thread([this] { io_.run(); });
}

void Cluster::start_book_sync() {
  book_sync_ = std::make_unique<BookSync>(
      *book_, [this](const std::string& addr, uint32_t kind, std::string body,
                     std::chrono::milliseconds deadline, PeerCallback cb) {
        book_exchanges_.fetch_add(1, std::memory_order_relaxed);
        peer(addr).call(kind, std::move(body), deadline, std::move(cb));
      });
  membership_->set_book_digest(book_->digest());
  membership_->on_book_advert([this](const std::string& from, uint64_t digest) {
    book_sync_->on_advert(from, digest, wall_now_ns() / 1'000'000);
  });
  book_listener_ = book_->listen([this] {
    asio::post(io_, [this] {
      membership_->set_book_digest(book_->digest());
      book_sync_->on_change(live_addrs());
    });
  });
}

std::vector<std::string> Cluster::live_addrs() const {
  std::vector<std::string> out;
  for (const auto& [id, m] : membership_->others())
    if (m.live()) out.push_back(m.addr);
  return out;
}

void Cluster::stop() {
  if (book_listener_) {
    book_->unlisten(book_listener_);
    book_listener_ = 0;
  }
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {
    timer_.cancel();
    replicator_->stop();
    if (transport_) transport_->close();
    if (server_) server_->close();
    for (auto& [a, p] : peers_) p->close();
    for (auto& o : outgoing_) o->retry.cancel();
  });
  guard_.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  io_.stop();
  thread_.join();
}

void Cluster::arm() {
  timer_.expires_after(std::chrono::milliseconds(kTickMs));
  timer_.async_wait([this](asio::error_code ec) {
    if (ec) return;
    tick();
    arm();
  });
}

void Cluster::tick() {
  const int64_t now = wall_now_ns();
  if (wake_.on_tick(now)) {
    // Only answers to pings sent from now on count: what waited in the socket buffer while
    // the process was stopped may predate the others declaring it dead.
    wake_seq_ = membership_->ping_all();
    spdlog::warn(
        "this node did not run for a while; not serving until it hears from most of "
        "the cluster");
  }
  membership_->tick(now);
  agreement_->tick(now);
  const SlotTable& table = agreement_->table();
  const bool down = wake_.standing_down(table.epoch(), table.members().size());
  if (down != standing_down_) {
    standing_down_ = down;
    dirty_ = true;
    if (!down) spdlog::info("heard from most of the cluster again (table epoch {})", table.epoch());
  }
  if (!down) pulse_ns_->store(now, std::memory_order_release);
  SlotKeeper::Actions a =
      keeper_.on_tick([this](const std::string& id) { return can_send(id); }, now);
  if (a.any()) {
    spdlog::warn("{} awaited slots never arrived; serving them from empty state",
                 a.serve_empty.count());
    apply(a);
  }
  if (dirty_) publish();
}

bool Cluster::live(const std::string& id) const {
  const auto& others = membership_->others();
  auto it = others.find(id);
  return it != others.end() && it->second.live();
}

bool Cluster::can_send(const std::string& id) const {
  if (id == cfg_.node_id) return true;
  const auto& others = membership_->others();
  auto it = others.find(id);
  return it != others.end() && (it->second.live() || it->second.state == MemberState::kLeft);
}

void Cluster::on_table(const SlotTable& before, const SlotTable& after) {
  counters_.table_changes.fetch_add(1, std::memory_order_relaxed);
  size_t mine = 0;
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (after.owner(s) != kNoOwner && after.owner_id(s) == cfg_.node_id) ++mine;
  spdlog::info("slot table epoch {} by {}: {} members, {} slots here", after.epoch(),
               after.planner(), after.members().size(), mine);
  // Fencing: a table that no longer lists us (we did not leave), or lists us only since
  // after the last table we knew, was planned while the others thought us dead. Whatever
  // we hold is stale: their replicas took over. Drop it, never hand it to anyone.
  const uint64_t since = after.member_since(cfg_.node_id);
  const bool was_member = before.epoch() > 0 && before.index_of(cfg_.node_id) >= 0;
  if (!leaving_ && was_member && (since == 0 || since > before.epoch())) {
    fence(after);
    return;
  }
  apply(keeper_.on_table(
      before, after, [this](const std::string& id) { return can_send(id); }, wall_now_ns()));
  replicator_->on_table(before, after);
}

void Cluster::fence(const SlotTable& after) {
  counters_.fenced.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn("the cluster went on without this node (table epoch {}); dropping its state",
               after.epoch());
  keeper_.fence();
  replicator_->fence();
  auto job = std::make_shared<SlotJob>();
  job->slots.set();
  job->remove = true;
  job->now_ns = pool_.clock()->now_ns();
  pool_.extract(job);  // (the snapshots are discarded)
  publish();
  // From here on, a newcomer: slots the table gives us are awaited from their owners.
  apply(keeper_.on_table(
      SlotTable(), after, [this](const std::string& id) { return can_send(id); }, wall_now_ns()));
  replicator_->on_table(SlotTable(), after);
}

// Order matters: slots start being served only after their shards were told to serve
// them, and stop being routed here before their shards let go of them.
void Cluster::apply(const SlotKeeper::Actions& a) {
  if (a.serve_empty.any()) {
    // Slots whose previous owner cannot send their state: a whole replica copy here is
    // promoted as it is; anything else starts from what this node holds (usually none).
    const size_t promoted = (a.serve_empty & replicator_->complete()).count();
    if (promoted) spdlog::info("serving {} slots from this replica's copy", promoted);
    counters_.slots_promoted.fetch_add(promoted, std::memory_order_relaxed);
    counters_.slots_started_empty.fetch_add(a.serve_empty.count() - promoted,
                                            std::memory_order_relaxed);
    auto job = std::make_shared<SlotJob>();
    job->slots = a.serve_empty;
    pool_.install(job, {});
  }
  publish();
  for (const auto& [to, slots] : a.send) {
    auto job = std::make_shared<SlotJob>();
    job->slots = slots;
    job->remove = true;
    auto o = std::make_shared<Outgoing>(io_);
    o->to = to;
    o->slots = slots;
    o->epoch = agreement_->table().epoch();
    o->id = next_handoff_++;
    ++extracting_;
    job->done = [this, o](SlotJob& j) {
      for (auto& part : j.per_shard)
        for (auto& e : part) o->entries.push_back(std::move(e));
      asio::post(io_, [this, o] {
        --extracting_;
        send_handoff(o);
      });
    };
    // Give batches routed by the previous snapshot (an I/O thread may have read it just
    // before the publish above) time to reach the shards: the extraction then includes
    // them instead of their being refused as "not owner".
    o->retry.expires_after(kExtractDelay);
    o->retry.async_wait([this, job](asio::error_code ec) {
      job->now_ns = pool_.clock()->now_ns();
      pool_.extract(job);  // even when cancelled at shutdown: the state must not be lost
      (void)ec;
    });
  }
}

void Cluster::send_handoff(std::shared_ptr<Outgoing> o) {
  auto parts = split_by_bytes(o->entries, cfg_.handoff_chunk_bytes);
  for (size_t i = 0; i < parts.size(); ++i) {
    wire::SlotHandoff h;
    h.set_from(cfg_.node_id);
    h.set_handoff_id(o->id);
    h.set_chunk(static_cast<uint32_t>(i));
    h.set_last(i + 1 == parts.size());
    h.set_epoch(o->epoch);
    h.set_slots(slots_to_bytes(o->slots));
    h.set_state(encode_state(parts[i]));
    o->chunks.push_back(h.SerializeAsString());
  }
  outgoing_.push_back(o);
  spdlog::info("handing {} slots ({} keys) to {}", o->slots.count(), o->entries.size(), o->to);
  send_chunk(o);
}

void Cluster::send_chunk(std::shared_ptr<Outgoing> o) {
  auto it = known_.find(o->to);
  if (it == known_.end() || !membership_->others().count(o->to) ||
      !membership_->others().at(o->to).live()) {
    return reclaim(o);
  }
  peer(it->second.addr)
      .call(kPeerHandoff, o->chunks[o->next], std::chrono::milliseconds(cfg_.handoff_timeout_ms),
            [this, o](PeerStatus st, std::string) {
              if (st == PeerStatus::kOk) {
                if (++o->next < o->chunks.size()) return send_chunk(o);
                counters_.handoffs_sent.fetch_add(1, std::memory_order_relaxed);
                counters_.keys_sent.fetch_add(o->entries.size(), std::memory_order_relaxed);
                spdlog::info("handed {} slots to {}", o->slots.count(), o->to);
                outgoing_.erase(std::remove(outgoing_.begin(), outgoing_.end(), o),
                                outgoing_.end());
                return;
              }
              o->retry.expires_after(kRetryDelay);
              o->retry.async_wait([this, o](asio::error_code ec) {
                if (!ec) send_chunk(o);
              });
            });
}

// The receiver is gone: take the state back and keep it until a newer table says where
// it goes (never serve it here unless that table gives it to us).
void Cluster::reclaim(std::shared_ptr<Outgoing> o) {
  spdlog::warn("{} is unreachable; keeping {} slots' state until the next table", o->to,
               o->slots.count());
  outgoing_.erase(std::remove(outgoing_.begin(), outgoing_.end(), o), outgoing_.end());
  auto job = std::make_shared<SlotJob>();
  const uint64_t hold_until = agreement_->table().epoch() + 1;
  job->done = [this, slots = o->slots, hold_until](SlotJob&) {
    asio::post(io_, [this, slots, hold_until] {
      apply(keeper_.on_install(slots, hold_until, agreement_->table()));
    });
  };
  // The shards hold it as theirs again (it is the only copy); routing decides whether
  // clients reach it, and the next table that gives it away extracts it from here.
  job->slots = o->slots;
  if (leaving_) lost_on_leave_ = true;
  pool_.install(job, std::move(o->entries));
}

void Cluster::dispatch(uint32_t kind, std::string body, PeerServer::Respond respond) {
  if (kind == kPeerHandoff) return on_handoff(std::move(body), std::move(respond));
  if (kind == kPeerReplicate) return replicator_->on_update(std::move(body), std::move(respond));
  if (kind == kPeerBook && book_sync_) return book_sync_->on_request(body, std::move(respond));
  auto it = handlers_.find(kind);
  if (it == handlers_.end()) return respond(PeerStatus::kUnknownKind, {}, "unknown request kind");
  it->second(kind, std::move(body), std::move(respond));
}

void Cluster::on_handoff(std::string body, PeerServer::Respond respond) {
  wire::SlotHandoff h;
  SlotBits slots;
  std::vector<EntrySnapshot> entries;
  if (!h.ParseFromString(body) || !slots_from_bytes(h.slots(), slots) ||
      !decode_state(h.state(), entries)) {
    return respond(PeerStatus::kError, {}, "malformed hand-off");
  }
  const auto key = std::make_pair(h.from(), h.handoff_id());
  auto done = installed_.find(key);
  if (done != installed_.end() && done->second > h.chunk()) {
    return respond(PeerStatus::kOk, {}, {});  // a resend of what is already installed
  }
  auto job = std::make_shared<SlotJob>();
  if (h.last()) job->slots = slots;
  if (h.chunk() == 0) job->clear = slots;  // a replica's older copy of them goes first
  const size_t n = entries.size();
  job->done = [this, key, n, last = h.last(), chunk = h.chunk(), epoch = h.epoch(), slots,
               respond = std::move(respond)](SlotJob&) mutable {
    asio::post(io_, [this, key, n, last, chunk, epoch, slots, respond = std::move(respond)] {
      if (installed_.size() > 100000) installed_.clear();
      installed_[key] = chunk + 1;
      counters_.handoffs_received.fetch_add(1, std::memory_order_relaxed);
      counters_.keys_received.fetch_add(n, std::memory_order_relaxed);
      if (last) {
        spdlog::info("received {} slots from {}", slots.count(), key.first);
        apply(keeper_.on_install(slots, epoch, agreement_->table()));
      }
      respond(PeerStatus::kOk, {}, {});
    });
  };
  pool_.install(job, std::move(entries));
}

bool Cluster::leave(std::chrono::milliseconds max_wait) {
  // Shared with the cluster thread, which may still run these after we gave up waiting.
  auto planned = std::make_shared<std::atomic<bool>>(false);
  auto drained = std::make_shared<std::atomic<bool>>(false);
  asio::post(io_, [this, planned] {
    leaving_ = true;
    const SlotTable& t = agreement_->table();
    std::vector<std::string> rest;
    for (const auto& id : membership_->live_ids())
      if (id != cfg_.node_id) rest.push_back(id);
    if (t.epoch() > 0 && !rest.empty()) {
      agreement_->propose(t.plan(rest, cfg_.replicas).stamped(t.epoch() + 1, cfg_.node_id));
    }
    membership_->leave(wall_now_ns());
    *planned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!*planned) continue;
    auto lost = std::make_shared<std::atomic<bool>>(false);
    asio::post(io_, [this, drained, lost] {
      *lost = lost_on_leave_;
      *drained = outgoing_.empty() && extracting_ == 0;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (*drained) return !*lost;
  }
  return false;
}

void Cluster::call(const std::string& peer_addr, uint32_t kind, std::string body,
                   std::chrono::milliseconds deadline, PeerCallback cb) {
  asio::post(
      io_, [this, peer_addr, kind, body = std::move(body), deadline, cb = std::move(cb)]() mutable {
        peer(peer_addr).call(kind, std::move(body), deadline, std::move(cb));
      });
}

PeerClient& Cluster::peer(const std::string& peer_addr) {
  auto& p = peers_[peer_addr];
  if (!p) p = std::make_shared<PeerClient>(io_, peer_addr, cfg_.bind_host);
  return *p;
}

void Cluster::publish() {
  dirty_ = false;
  auto r = std::make_shared<Routing>();
  const SlotTable& t = agreement_->table();
  r->epoch = t.epoch();
  for (const auto& [id, m] : membership_->others()) known_[id] = m;
  known_[cfg_.node_id] = membership_->self();
  auto node_of = [&](const std::string& id, bool in_table) {
    RouteNode n;
    n.id = id;
    n.in_table = in_table;
    n.self = id == cfg_.node_id;
    auto it = known_.find(id);
    if (it != known_.end()) {
      split_addr(it->second.resp_addr, n.resp_host, n.resp_port);
      n.native_port = it->second.native_port;
      n.peer_addr = it->second.addr;
      n.state = it->second.state;
    } else {
      n.state = MemberState::kDead;
    }
    return n;
  };
  for (const auto& id : t.members()) r->nodes.push_back(node_of(id, true));
  for (const auto& [id, m] : known_) {
    if (std::find(t.members().begin(), t.members().end(), id) == t.members().end() &&
        (m.live() || id == cfg_.node_id)) {
      r->nodes.push_back(node_of(id, false));
    }
  }
  for (size_t i = 0; i < r->nodes.size(); ++i)
    if (r->nodes[i].self) r->self_index = static_cast<int>(i);
  for (uint32_t s = 0; s < kSlotCount; ++s) r->owner[s] = t.owner(s);
  if (t.epoch() > 0) r->ranges = t.ranges();
  r->awaiting = keeper_.awaiting();
  // Cut off from most of the table's members, a node stops serving: the others may have
  // promoted its slots' replicas already. (Two-node tables cannot tell; they serve.)
  // Suspects do not count: a node that hears nobody suspects everyone within a few probe
  // rounds, well before the others can have declared it dead (suspicion lasts at least
  // suspicion_min), so an owner cut off even one way stops before its replica takes over.
  r->quorum = !standing_down_ &&
              (t.epoch() == 0 || t.members().size() < 3 || t.quorum(membership_->alive_ids()));
  r->pulse_ns = pulse_ns_;
  r->replicas = t.replica_count();
  for (uint32_t s = 0; s < kSlotCount && r->quorum; ++s) {
    if (keeper_.held().test(s) && static_cast<int>(r->owner[s]) == r->self_index) r->serving.set(s);
  }
  hub_.publish(std::move(r));
}

}  // namespace fg
