// The cluster thread: its lifecycle and tick, reactions to a new table, peer requests, and
// the routing snapshots it publishes. Hand-offs, fencing and leaving have files of their own.
#include "cluster.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "peer.pb.h"
#include "routing_build.hpp"
#include "state.pb.h"

namespace fg {

namespace {
constexpr int64_t kTickMs = 10;
}  // namespace

Cluster::Cluster(ClusterConfig cfg, ShardPool& pool)
    : cfg_(std::move(cfg)),
      clock_(cfg_.clock ? cfg_.clock : &SystemClock::process()),
      random_(cfg_.seed ? cfg_.seed
                        : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()),
      pool_(pool),
      guard_(asio::make_work_guard(io_)),
      timer_(io_),
      keeper_(cfg_.node_id, cfg_.await_timeout_ms * 1'000'000) {
  keeper_.set_first_table_awaits(true);  // (its replicas are asked: copy_back.cpp)
  if (cfg_.announce_host.empty()) cfg_.announce_host = cfg_.bind_host;
  if (!cfg_.peer_net) tcp_ = std::make_unique<TcpPeerNet>(cfg_.bind_host, cfg_.bus_key, cfg_.tls);
  if (!cfg_.datagrams) udp_ = std::make_unique<UdpDatagramNet>();
  net_ = cfg_.peer_net ? cfg_.peer_net : tcp_.get();
  datagrams_ = cfg_.datagrams ? cfg_.datagrams : udp_.get();
  next_handoff_ = random_() >> 1 | 1;  // (room to count up)
  ReplicatorConfig rc;
  rc.self = cfg_.node_id;
  rc.lag_ms = cfg_.replication_lag_ms;
  lag_ms_.store(cfg_.replication_lag_ms, std::memory_order_relaxed);
  rc.timeout_ms = cfg_.sync_timeout_ms;
  rc.chunk_bytes = cfg_.handoff_chunk_bytes;
  rc.clock = clock_;
  replicator_ = std::make_unique<Replicator>(
      rc, pool_, io_, keeper_.held(), lost_,
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
  transport_ = datagrams_->open(io_, cfg_.bind_host, static_cast<uint16_t>(cfg_.port), cfg_.bus_key,
                                [this](const std::string& from, std::string_view bytes) {
                                  membership_->receive(from, bytes, now_ns());
                                });
  server_ = net_->listen(io_, cfg_.bind_host, static_cast<uint16_t>(cfg_.port),
                         [this](uint32_t kind, std::string body, PeerServer::Respond respond) {
                           dispatch(kind, std::move(body), std::move(respond));
                         });
  membership_ = std::make_unique<Membership>(cfg_.membership, cfg_.node_id, addr, resp_addr,
                                             *transport_, random_());
  membership_->set_native_port(cfg_.native_port);
  membership_->begin_time(cfg_.seeds, now_ns());
  membership_->on_time_settled([this](int64_t delta) {
    if (delta != 0) {
      clock_->shift(delta);
      wake_.rebase(delta);
      pulse_ns_->store(now_ns(), std::memory_order_release);
      spdlog::warn(
          "this node's clock was {:.3f} s {} the cluster's (its machine's wall clock was "
          "stepped?): it takes the cluster's time, then follows its own by slewing",
          static_cast<double>(std::llabs(delta)) / 1e9, delta < 0 ? "ahead of" : "behind");
    }
    dirty_ = true;
  });
  if (cfg_.bus_key) {
    // Peer links and gossip name their receiver: this node is the one its bus address names.
    cfg_.bus_key->set_names({addr});
    membership_->on_misaddressed([key = cfg_.bus_key] { key->count_misaddressed(); });
  }
  agreement_ = std::make_unique<TableAgreement>(*membership_, cfg_.settle_ms * 1'000'000);
  agreement_->set_replicas(cfg_.replicas);
  agreement_->on_change(
      [this](const SlotTable& before, const SlotTable& after) { on_table(before, after); });
  membership_->on_change([this](const Member& m) {
    known_[m.id] = m;
    dirty_ = true;
    // Forwards and replication waiting on a member just declared dead (a paused process, a
    // one-way partition: its connection stays open) end now, not at their deadlines. (One
    // leaving still answers: what it is asked for its copies must not be cut short.)
    if (!m.live() && m.state != MemberState::kLeft) {
      auto p = peers_.find(m.addr);
      if (p != peers_.end()) p->second->abort_calls();
    }
    if (m.state == MemberState::kDead)
      counters_.members_dead.fetch_add(1, std::memory_order_relaxed);
    if (m.state == MemberState::kSuspect) {
      counters_.members_suspected.fetch_add(1, std::memory_order_relaxed);
    }
    spdlog::info("member {} ({}) is {}", m.id, m.resp_addr, state_name(m.state));
  });
  membership_->on_heard([this](const std::string& id, uint64_t epoch, uint64_t seq) {
    if (seq >= wake_seq_) wake_.on_heard(id, epoch);
  });
  pulse_ns_ = std::make_shared<std::atomic<int64_t>>(now_ns());
  known_[cfg_.node_id] = membership_->self();
  if (book_) start_book_sync();
  publish();
  asio::post(io_, [this] {
    membership_->join(cfg_.seeds, now_ns());
    arm();
    replicator_->start();
  });
  if (!cfg_.polled) thread_ = std::thread([this] { io_.run(); });
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
    book_sync_->on_advert(from, digest, now_ns() / 1'000'000);
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
  auto close = [this] {
    timer_.cancel();
    replicator_->stop();
    if (transport_) transport_->close();
    if (server_) server_->close();
    for (auto& [a, p] : peers_) p->close();
    for (auto& o : outgoing_) o->retry.cancel();
  };
  if (cfg_.polled) {  // (on the owner's thread, which runs io_)
    if (membership_ && !stopped_) close();
    stopped_ = true;
    guard_.reset();
    io_.stop();
    return;
  }
  if (!thread_.joinable()) return;
  asio::post(io_, close);
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
  const int64_t now = now_ns();
  if (wake_.on_tick(now)) {
    // Only answers to pings sent from now on count: what waited in the socket buffer while
    // the process was stopped may predate the others declaring it dead.
    wake_seq_ = membership_->ping_all();
    counters_.not_serving.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "this node did not run for a while; not serving until it hears from most of "
        "the cluster");
  }
  if (!membership_->time_settled()) {
    // Starting: nothing but membership until this node has the cluster's time (it stands
    // down meanwhile; publish()). A clock moved here counts from the next tick.
    membership_->tick(now);
    if (dirty_) publish();
    return;
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
  if (confirming_) {
    // Has a quorum confirmed the table yet? Only a member heard anew can tell (two members:
    // each tick, as how long a suspicion has run counts). Asked every tick, a node out of
    // touch rebuilt its routing every 10 ms — at 1,000 members, most of its upkeep.
    const uint64_t h = membership_->heard_version();
    if (h != confirm_heard_ || agreement_->table().members().size() == 2) dirty_ = true;
    confirm_heard_ = h;
    if (now - confirm_asked_ns_ >= kConfirmAskNs) ask_unconfirmed(now);
  } else if (const SlotTable& t = agreement_->table(); t.epoch() > 0 && t.members().size() >= 2) {
    // (Two members: who counts depends on how long a suspicion has run, so every tick.
    // More: only when the membership or the table changed.)
    const std::pair<uint64_t, uint64_t> seen{membership_->version(), t.epoch()};
    if (((t.members().size() == 2 || seen != quorum_checked_) && !t.quorum(seen_alive(t))) ||
        isolated(now)) {
      dirty_ = true;  // (publish() notices it lost the quorum)
    }
    quorum_checked_ = seen;
  }
  if (agreement_->behind() != behind_) {
    behind_ = !behind_;
    dirty_ = true;
    if (behind_) spdlog::info("a newer slot table than ours exists: not serving until it is here");
  }
  SlotKeeper::Actions a =
      keeper_.on_tick([this](const std::string& id) { return can_send(id); }, now);
  if (a.any()) {
    spdlog::warn("{} awaited slots never arrived; serving them from empty state",
                 a.serve_empty.count());
    apply(a);
  }
  if (!grace_.empty() && !down) grace_tick(now);
  if (!reclaimed_.empty() && !down) hand_again();
  // (a leaving node asks even while it stands down: it serves nothing either way, and its
  // exit waits on the answers)
  if (!down || leaving_) check_spares(now);
  if (!fetching_.empty() && now >= gather_until_ns_) gathered();
  if (recover_retry_.any() && now >= recover_retry_at_ns_) {
    const SlotBits again = recover_retry_;
    recover_retry_.reset();
    recover(again);
  }
  if (leaving_) note_leave(now);
  if (dirty_) publish();
  if (restoring_ && !down) push_restored(now);
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
  confirming_ = false;  // (a table a member gave us or we planned: the cluster's own)
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
  // A table can list members this node has not heard of yet (in a large cluster the
  // planner's view is complete before everyone's is): to this node they would be dead, and
  // the keys they own unreachable from here. Their addresses are in the planner's view.
  {
    const auto& others = membership_->others();
    bool unknown = false;
    for (const std::string& id : after.members())
      unknown = unknown || (id != cfg_.node_id && !others.count(id));
    auto planner = others.find(after.planner());
    if (unknown && planner != others.end()) membership_->sync_with(planner->second.addr);
  }
  // Slots in their grace period that this table gives to someone else: no longer ours to
  // hold back (the keeper hands them over, empty).
  if (lost_.any()) {
    SlotBits ours;
    for (uint32_t s = 0; s < kSlotCount; ++s)
      if (after.owner(s) != kNoOwner && after.owner_id(s) == cfg_.node_id) ours.set(s);
    lost_ &= ours;
    for (auto& g : grace_) g.slots &= ours;
  }
  apply(keeper_.on_table(
      before, after, [this](const std::string& id) { return can_send(id); }, now_ns()));
  replicator_->on_table(before, after);
  if (before.epoch() == 0 && keeper_.awaiting().any()) {
    asking_ = keeper_.awaiting();
    ask_rank_ = 1;
    ask_epoch_ = after.epoch();
    ask_copies();
  }
}

SlotBits Cluster::out_of_grace(const SlotBits& slots) {
  const SlotBits now = slots & lost_;
  if (now.none()) return now;
  lost_ &= ~now;
  for (auto& g : grace_) g.slots &= ~now;
  grace_.erase(
      std::remove_if(grace_.begin(), grace_.end(), [](const Grace& g) { return g.slots.none(); }),
      grace_.end());
  return now;
}

void Cluster::end_grace(const SlotBits& slots, const char* why) {
  const SlotBits now = out_of_grace(slots);
  if (now.none()) return;
  counters_.slots_started_empty.fetch_add(now.count(), std::memory_order_relaxed);
  spdlog::info("serving {} slots that had no reachable copy ({})", now.count(), why);
  started_empty(now, now_ns());
  auto job = std::make_shared<InstallJob>();
  job->slots = now;
  pool_.install(job, {});
  dirty_ = true;
}

void Cluster::started_empty(const SlotBits& slots, int64_t now_ns) {
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (slots.test(s)) empty_at_ns_[s] = now_ns;
}

SlotBits Cluster::fresh_slots(int64_t now_ns) const {
  constexpr int64_t kFreshNs = 60'000'000'000;  // (restored and fenced state come sooner)
  SlotBits out;
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (empty_at_ns_[s] > 0 && now_ns - empty_at_ns_[s] < kFreshNs) out.set(s);
  return out;
}

void Cluster::grace_tick(int64_t now_ns) {
  SlotBits due;
  for (const auto& g : grace_)
    if (now_ns >= g.until_ns) due |= g.slots;
  if (due.any()) end_grace(due, "the grace period passed: from empty state");
}

// Order matters: slots start being served only after their shards were told to serve
// them, and stop being routed here before their shards let go of them.
void Cluster::apply(const SlotKeeper::Actions& a) {
  if (a.serve_empty.any()) {
    // Slots whose previous owner cannot send their state: a whole replica copy here is
    // promoted as it is. A slot nobody held (a first table) starts empty. The rest — every
    // copy out of reach — answer their policies' fail mode for cluster-empty-grace first:
    // serving from nothing is a choice, not a default.
    const SlotBits promoted = a.serve_empty & replicator_->complete();
    SlotBits now = a.serve_empty;
    const SlotBits lost = a.serve_empty & ~promoted & ~a.fresh;
    if (promoted.any()) spdlog::info("serving {} slots from this replica's copy", promoted.count());
    counters_.slots_promoted.fetch_add(promoted.count(), std::memory_order_relaxed);
    if (lost.any() && cfg_.empty_grace_ms > 0) {
      now &= ~lost;
      lost_ |= lost;
      grace_.push_back({lost, now_ns() + cfg_.empty_grace_ms * 1'000'000});
      counters_.slots_given_grace.fetch_add(lost.count(), std::memory_order_relaxed);
      spdlog::warn(
          "{} slots have no reachable copy of their state: their policies' fail mode answers "
          "for {} ms, then they are served from empty state",
          lost.count(), cfg_.empty_grace_ms);
      recover(lost);  // (every member is asked for a copy meanwhile)
    } else {
      counters_.slots_started_empty.fetch_add(lost.count(), std::memory_order_relaxed);
    }
    if (now.any()) {
      started_empty(now & ~promoted, now_ns());
      auto job = std::make_shared<InstallJob>();
      job->slots = now;
      pool_.install(job, {});
    }
  }
  publish();
  for (const auto& [to, slots] : a.send) hand_off(to, slots);
}

void Cluster::dispatch(uint32_t kind, std::string body, PeerServer::Respond respond) {
  // Starting, not yet on the cluster's time: state judged by this clock would be judged
  // wrong (clock_sync.hpp). The caller retries as it does for a node not up yet.
  if (!membership_->time_settled()) {
    return respond(PeerStatus::kUnavailable, {}, "starting: not on the cluster's time yet");
  }
  if (kind == kPeerHandoff) return on_handoff(std::move(body), std::move(respond));
  if (kind == kPeerMerge) return on_merge(std::move(body), std::move(respond), false);
  if (kind == kPeerMergeIntoFresh) return on_merge(std::move(body), std::move(respond), true);
  if (kind == kPeerReplicate) return replicator_->on_update(std::move(body), std::move(respond));
  if (kind == kPeerCopyBack) return on_copy_back(std::move(body), std::move(respond));
  if (kind == kPeerHolds) return on_holds(std::move(body), std::move(respond));
  if (kind == kPeerBook && book_sync_) return book_sync_->on_request(body, std::move(respond));
  auto it = handlers_.find(kind);
  if (it == handlers_.end()) return respond(PeerStatus::kUnknownKind, {}, "unknown request kind");
  it->second(kind, std::move(body), std::move(respond));
}

void Cluster::call(const std::string& peer_addr, uint32_t kind, std::string body,
                   std::chrono::milliseconds deadline, PeerCallback cb) {
  asio::post(
      io_, [this, peer_addr, kind, body = std::move(body), deadline, cb = std::move(cb)]() mutable {
        peer(peer_addr).call(kind, std::move(body), deadline, std::move(cb));
      });
}

PeerLink& Cluster::peer(const std::string& peer_addr) {
  auto& p = peers_[peer_addr];
  if (!p) p = net_->connect(io_, peer_addr);
  return *p;
}

// Two members: the lower id keeps the quorum when they lose each other (SlotTable::quorum)
// and plans without the other once it has declared it dead — after the suspicion's timeout,
// which with no third member to confirm it is suspicion_max. The higher one must have
// stopped serving by then: it gives up once it has suspected the lower for suspicion_min.
// A suspicion refuted sooner (a lost packet: there is no other member to probe through) is
// ridden out. More members: suspects do not count (a majority answers for itself).
std::vector<std::string> Cluster::seen_alive(const SlotTable& t) const {
  if (t.members().size() != 2) return membership_->alive_ids();
  std::vector<std::string> out{cfg_.node_id};
  const int64_t now = now_ns();
  for (const auto& [id, m] : membership_->others()) {
    if (m.state == MemberState::kAlive ||
        (m.state == MemberState::kSuspect &&
         now - m.changed_ns < membership_->config().suspicion_min_ns)) {
      out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A member confirms the table by a message of its own that advertises its epoch. Waiting
// for each to come by (a probe, a gossip round) took 15-20 s at 1,000 members, where a node
// hears from a random member ~30 times a second: ask the ones not heard yet, directly.
void Cluster::ask_unconfirmed(int64_t now) {
  confirm_asked_ns_ = now;
  membership_->ping_unheard(agreement_->table().epoch());
}

bool Cluster::isolated(int64_t now) const {
  return agreement_->table().members().size() >= 3 &&
         now - membership_->last_heard_ns() > membership_->config().isolated_after_ns;
}

std::vector<std::string> Cluster::quorum_view() {
  const SlotTable& t = agreement_->table();
  std::vector<std::string> alive = seen_alive(t);
  if (t.epoch() == 0 || t.members().size() < 2) {
    confirming_ = false;
    return alive;
  }
  if (!confirming_) {
    if (t.quorum(alive) && !isolated(now_ns())) return alive;
    confirming_ = true;  // (lost: from now on only what members say themselves counts)
    membership_->forget_heard();
    ask_unconfirmed(now_ns());
    counters_.not_serving.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("out of touch with most of the cluster (table epoch {}): not serving", t.epoch());
    return alive;
  }
  std::vector<std::string> confirmed;
  for (const std::string& id : alive) {
    if (id == cfg_.node_id || membership_->heard_epoch(id) == t.epoch()) confirmed.push_back(id);
  }
  if (t.quorum(confirmed)) {
    confirming_ = false;
    spdlog::info("most of the cluster confirmed table epoch {}: serving again", t.epoch());
  }
  return confirmed;
}

void Cluster::publish() {
  dirty_ = false;
  for (const auto& [id, m] : membership_->others()) known_[id] = m;
  known_[cfg_.node_id] = membership_->self();
  RoutingInputs in;
  in.table = &agreement_->table();
  in.self = cfg_.node_id;
  in.known = &known_;
  in.held = keeper_.held() & ~lost_;
  in.awaiting = keeper_.awaiting();
  in.lost = lost_;
  in.alive = quorum_view();
  in.standing_down = standing_down_ || behind_ || !membership_->time_settled();
  in.pulse_ns = pulse_ns_;
  hub_.publish(std::make_shared<Routing>(build_routing(in)));
}

}  // namespace fg
