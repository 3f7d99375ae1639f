// The SWIM rules. Precedence of updates: higher incarnation wins; at equal incarnation
// left/dead > suspect > alive. Only a node itself raises its incarnation (to refute).
#include "membership.hpp"

#include <algorithm>
#include <cmath>

#include "gossip.pb.h"

namespace fg {

namespace {
constexpr uint32_t kWireVersion = 1;
// A datagram that fits one Ethernet frame under IPv4 or IPv6 with room for the cluster
// secret's seal (UDP payload 1472 over IPv4, 1452 over IPv6).
constexpr size_t kViewDatagramBytes = 1350;

int rank(MemberState s) {
  switch (s) {
    case MemberState::kAlive:
      return 0;
    case MemberState::kSuspect:
      return 1;
    case MemberState::kDead:
    case MemberState::kLeft:
      return 2;
  }
  return 0;
}
}  // namespace

Membership::Membership(MembershipConfig cfg, std::string id, std::string addr,
                       std::string resp_addr, Transport& transport, uint64_t seed)
    : cfg_(cfg), transport_(transport), rng_(seed), time_(cfg.time) {
  self_.id = std::move(id);
  self_.addr = std::move(addr);
  self_.resp_addr = std::move(resp_addr);
}

namespace {
// The ids of `members` (a map: in order) that pass `keep`, with `self` in its place.
template <class Keep>
std::vector<std::string> ids_with(const std::string& self,
                                  const std::map<std::string, Member>& members, Keep keep) {
  std::vector<std::string> out;
  out.reserve(members.size() + 1);
  bool placed = false;
  for (const auto& [id, m] : members) {
    if (!keep(m)) continue;
    if (!placed && self < id) {
      out.push_back(self);
      placed = true;
    }
    out.push_back(id);
  }
  if (!placed) out.push_back(self);
  return out;
}
}  // namespace

std::vector<std::string> Membership::live_ids() const {
  return ids_with(self_.id, members_, [](const Member& m) { return m.live(); });
}

std::vector<std::string> Membership::alive_ids() const {
  return ids_with(self_.id, members_,
                  [](const Member& m) { return m.state == MemberState::kAlive; });
}

int Membership::retransmit_limit() const {
  const double n = static_cast<double>(members_.size() + 1);
  return cfg_.retransmit_mult * std::max(1, static_cast<int>(std::ceil(std::log10(n + 1))));
}

bool Membership::backlogged() const {
  const int64_t rounds = cfg_.sync_interval_ns / std::max<int64_t>(1, cfg_.gossip_interval_ns);
  const int64_t carried = rounds * cfg_.gossip_fanout * static_cast<int64_t>(cfg_.max_piggyback);
  int64_t waiting = 0;
  for (const auto& q : queue_) waiting += q.second;
  return waiting > carried;
}

void Membership::broadcast(const Member& m) {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const auto& q) { return q.first->id == m.id; }),
               queue_.end());
  queue_.emplace_back(std::make_unique<const Member>(m), retransmit_limit());
}

void Membership::send(int kind, const std::string& to_addr, uint64_t seq, const std::string& target,
                      const std::string& target_addr, bool full_view, int64_t echo_ns) {
  wire::Envelope env;
  env.set_version(kWireVersion);
  env.set_kind(static_cast<wire::Envelope::Kind>(kind));
  env.set_seq(seq);
  env.set_from(self_.id);
  env.set_from_addr(self_.addr);
  env.set_target(target);
  env.set_target_addr(target_addr);
  env.set_table_epoch(advert_epoch_);
  env.set_table_planner(advert_planner_);
  env.set_book_digest(book_digest_);
  // Clocks travel only while they are asked for: a node not yet on the cluster's time stamps
  // its own messages, and the answers to those echo them (a settled cluster's gossip
  // carries no clock at all).
  if (!time_.settled() || echo_ns != 0) {
    env.set_sent_ns(now_);
    env.set_time_settled(time_.settled());
  }
  if (echo_ns != 0) env.set_echo_ns(echo_ns);
  // Named receiver: a datagram recorded on its way to one node is not believed by another.
  // A join's SYNC_REQ to a seed goes unnamed: the seed may be a name (DNS) its node does not
  // know itself by.
  if (kind != wire::Envelope::SYNC_REQ ||
      std::find(seeds_.begin(), seeds_.end(), to_addr) == seeds_.end()) {
    env.set_to_addr(to_addr);
  }
  auto add = [&](const Member& m) {
    auto* u = env.add_updates();
    u->set_id(m.id);
    u->set_addr(m.addr);
    u->set_resp_addr(m.resp_addr);
    u->set_native_port(static_cast<uint32_t>(m.native_port));
    u->set_state(static_cast<wire::MemberState>(m.state));
    u->set_incarnation(m.incarnation);
    if (m.state == MemberState::kSuspect) u->set_accuser(m.accuser);
  };
  if (kind == wire::Envelope::PING) {
    auto t = members_.find(target);
    if (t != members_.end() && t->second.state == MemberState::kSuspect) add(t->second);
  }
  if (full_view) {
    // A whole view grows with the cluster (about 50 bytes a member): it goes in datagrams
    // of at most kViewDatagramBytes, so none is fragmented by IP (a lost fragment loses the
    // datagram) or, past about 1,300 members, too big to send at all. The first carries
    // this message's kind; the rest are SYNCs, which a receiver merges and does not answer
    // (a SYNC_REQ to a seed stays a SYNC_REQ: unnamed, as the seed may not know its name).
    const bool unnamed = env.to_addr().empty();
    add(self_);
    for (const auto& [id, m] : members_) {
      add(m);
      if (env.updates_size() > 1 && env.ByteSizeLong() > kViewDatagramBytes) {
        env.mutable_updates()->RemoveLast();
        std::string bytes;
        env.SerializeToString(&bytes);
        transport_.send(to_addr, bytes);
        env.clear_updates();
        if (!unnamed) env.set_kind(wire::Envelope::SYNC);
        add(m);
      }
    }
  } else {
    // Piggyback the least-sent updates first; drop those sent often enough.
    std::stable_sort(queue_.begin(), queue_.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    size_t n = 0;
    for (auto& q : queue_) {
      if (n++ == cfg_.max_piggyback) break;
      add(*q.first);
      --q.second;
    }
    queue_.erase(
        std::remove_if(queue_.begin(), queue_.end(), [](const auto& q) { return q.second <= 0; }),
        queue_.end());
  }
  std::string bytes;
  env.SerializeToString(&bytes);
  transport_.send(to_addr, bytes);
}

void Membership::join(const std::vector<std::string>& seed_addrs, int64_t now_ns) {
  now_ = now_ns;
  seeds_.clear();
  for (const auto& a : seed_addrs)
    if (a != self_.addr) seeds_.push_back(a);
  begin_time(seed_addrs, now_ns);
  next_seed_ns_ = now_ns + cfg_.seed_retry_ns;
  broadcast(self_);
  for (const auto& a : seed_addrs) {
    if (a != self_.addr) send(wire::Envelope::SYNC_REQ, a, ++seq_, "", "", true);
  }
  next_probe_ns_ = now_ns + cfg_.probe_interval_ns;
  // The first push-pull at a random point of the second half of the interval: nodes started
  // together (a rollout, a whole cluster) would otherwise all swap views at the same instant,
  // every interval after.
  const int64_t half = cfg_.sync_interval_ns / 2;
  next_sync_ns_ = now_ns + half + static_cast<int64_t>(rng_() % static_cast<uint64_t>(half + 1));
  last_sync_ns_ = now_ns;
  last_heard_ns_ = now_ns;
}

void Membership::begin_time(const std::vector<std::string>& seed_addrs, int64_t now_ns) {
  bool alone = true;  // with no seed but itself, this node starts a cluster
  for (const auto& a : seed_addrs) alone = alone && a == self_.addr;
  time_.begin(self_.id, now_ns, alone);
}

void Membership::sync_with(const std::string& addr) {
  if (addr != self_.addr) send(wire::Envelope::SYNC_REQ, addr, ++seq_, "", "", true);
}

void Membership::leave(int64_t now_ns) {
  leaving_ = true;
  self_.state = MemberState::kLeft;
  ++version_;
  broadcast(self_);
  for (const Member* m : random_live(static_cast<size_t>(cfg_.indirect_checks) + 2, "")) {
    send(wire::Envelope::PING, m->addr, ++seq_, m->id, m->addr, false);
  }
  // Members leaving too hear it from us: nobody gossips to a leaving node, and one that
  // waits for a member to take its state must learn that this one never will (a whole
  // cluster stopped at once).
  for (const auto& [id, m] : members_) {
    if (m.state == MemberState::kLeft)
      send(wire::Envelope::PING, m.addr, ++seq_, m.id, m.addr, false);
  }
}

std::vector<const Member*> Membership::random_live(size_t k, const std::string& except) {
  std::vector<const Member*> live;
  for (const auto& [id, m] : members_)
    if (m.live() && id != except) live.push_back(&m);
  std::shuffle(live.begin(), live.end(), rng_);
  if (live.size() > k) live.resize(k);
  return live;
}

void Membership::set_state(Member& m, MemberState s, uint64_t inc, int64_t now) {
  const bool changed = m.state != s;
  m.incarnation = inc;
  if (changed) {
    ++version_;
    m.state = s;
    if (s == MemberState::kAlive) {
      unsettled_.erase(m.id);
    } else {
      unsettled_.insert(m.id);
    }
    m.changed_ns = now;
  }
  broadcast(m);
  if (changed && on_change_) on_change_(m);
}

void Membership::refute(uint64_t heard_incarnation) {
  self_.incarnation = std::max(self_.incarnation, heard_incarnation) + 1;
  broadcast(self_);
}

void Membership::apply(const Member& u, int64_t now) {
  if (u.id == self_.id) {
    if (!leaving_ && u.state != MemberState::kAlive && u.incarnation >= self_.incarnation) {
      refute(u.incarnation);  // "I am not dead": outbid the rumour
    }
    return;
  }
  auto it = members_.find(u.id);
  if (it == members_.end()) {
    if (!u.live()) return;  // no need to learn of a stranger only to bury it
    Member m = u;
    m.changed_ns = now;
    members_.emplace(m.id, m);
    ++version_;
    if (m.state != MemberState::kAlive) unsettled_.insert(m.id);
    probe_order_.insert(
        probe_order_.begin() + static_cast<long>(rng_() % (probe_order_.size() + 1)), m.id);
    broadcast(m);
    if (on_change_) on_change_(m);
    return;
  }
  Member& m = it->second;
  if (u.state == MemberState::kSuspect && m.state == MemberState::kSuspect &&
      u.incarnation == m.incarnation) {
    // Another accuser of the same incarnation: a confirmation, worth passing on.
    if (!u.accuser.empty() && m.accusers.insert(u.accuser).second) {
      Member copy = m;
      copy.accuser = u.accuser;
      broadcast(copy);
    }
    return;
  }
  const bool newer = u.incarnation > m.incarnation ||
                     (u.incarnation == m.incarnation && rank(u.state) > rank(m.state));
  if (!newer) return;
  if (u.state == MemberState::kDead && m.live() && u.incarnation == m.incarnation &&
      m.acked_ns > 0 && now - m.acked_ns < cfg_.suspicion_min_ns) {
    // Another node buried a member that answered us a moment ago (it was cut off from it,
    // a stale rumour from across a healed partition): suspect it ourselves instead, so it
    // can refute before it is dead here too.
    if (m.state != MemberState::kSuspect) {
      suspect(m, u.incarnation, u.accuser, now);
    } else if (!u.accuser.empty()) {
      m.accusers.insert(u.accuser);
    }
    return;
  }
  m.addr = u.addr;
  m.resp_addr = u.resp_addr;
  m.native_port = u.native_port;
  if (u.state == MemberState::kSuspect) {
    suspect(m, u.incarnation, u.accuser, now);
  } else {
    set_state(m, u.state, u.incarnation, now);
  }
}

void Membership::suspect(Member& m, uint64_t inc, const std::string& accuser, int64_t now) {
  m.accusers.clear();
  if (!accuser.empty()) m.accusers.insert(accuser);
  m.accuser = accuser;
  set_state(m, MemberState::kSuspect, inc, now);
}

int64_t Membership::suspicion_timeout(const Member& m) const {
  // Confirmations beyond the first accuser cannot outnumber the members who could accuse
  // (the live ones but the suspect, this node included): in a small cluster, every one of
  // them accusing is as strong as it gets, and then the timeout is the minimum.
  int could_accuse = 1;
  for (const auto& [id, o] : members_) could_accuse += o.live() && id != m.id;
  const double k = std::max(1, std::min(cfg_.suspicion_confirmations, could_accuse - 1));
  const double c = std::min(k, static_cast<double>(m.accusers.empty() ? 0 : m.accusers.size() - 1));
  const double span = static_cast<double>(cfg_.suspicion_max_ns - cfg_.suspicion_min_ns);
  const double t =
      static_cast<double>(cfg_.suspicion_max_ns) - span * std::log(c + 1) / std::log(k + 1);
  return std::max(cfg_.suspicion_min_ns, static_cast<int64_t>(t));
}

bool Membership::addressed_here(const wire::Envelope& env) const {
  if (!env.to_addr().empty()) return env.to_addr() == self_.addr;
  return env.kind() == wire::Envelope::SYNC_REQ || cfg_.accept_unaddressed;
}

void Membership::receive(const std::string& from_addr, std::string_view bytes, int64_t now) {
  wire::Envelope env;
  if (!env.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  if (env.version() / 1000 > kWireVersion / 1000) return;  // a future major version
  if (!addressed_here(env)) {
    if (on_misaddressed_) on_misaddressed_();
    return;
  }
  now_ = now;
  if (!time_.settled() && !env.from().empty() && env.echo_ns() != 0 &&
      (env.kind() == wire::Envelope::ACK || env.kind() == wire::Envelope::SYNC)) {
    time_.sample(env.from(), env.sent_ns(), env.echo_ns(), now, env.time_settled());
    now += settle_time(now);  // (before anything below is timed)
  }
  if (!env.from().empty() && env.from() != self_.id) last_heard_ns_ = now;
  for (const auto& w : env.updates()) {
    Member u;
    u.id = w.id();
    u.addr = w.addr();
    u.resp_addr = w.resp_addr();
    u.native_port = static_cast<int>(std::min<uint32_t>(w.native_port(), 65535));
    u.state = static_cast<MemberState>(std::min<int>(w.state(), 3));
    u.incarnation = w.incarnation();
    u.accuser = w.accuser();
    apply(u, now);
  }
  const std::string reply_to = env.from_addr().empty() ? from_addr : env.from_addr();
  if (!env.from().empty()) {
    auto [h, fresh] = heard_epoch_.try_emplace(env.from(), env.table_epoch());
    if (fresh || h->second != env.table_epoch()) {
      h->second = env.table_epoch();
      ++heard_version_;
    }
  }
  if (on_heard_ && env.kind() == wire::Envelope::ACK && !env.from().empty())
    on_heard_(env.from(), env.table_epoch(), env.seq());
  // Until this node's time is the cluster's, it takes no table and no settings: what it
  // would do with them is timed by a clock that is about to move. (Every message carries
  // the adverts again.)
  const bool timed = time_.settled();
  if (on_advert_ && timed && env.table_epoch() > 0)
    on_advert_(reply_to, env.table_epoch(), env.table_planner());
  if (on_book_advert_ && timed && env.book_digest() != book_digest_)
    on_book_advert_(reply_to, env.book_digest());
  switch (env.kind()) {
    case wire::Envelope::PING:
      if (env.target() == self_.id)
        send(wire::Envelope::ACK, reply_to, env.seq(), "", "", false, env.sent_ns());
      break;
    case wire::Envelope::ACK: {
      if (probe_ && probe_->seq == env.seq()) {
        probe_->acked = true;
        auto t = members_.find(probe_->target);
        if (t != members_.end()) t->second.acked_ns = now;
      }
      auto r = relays_.find(env.seq());
      if (r != relays_.end()) {
        send(wire::Envelope::ACK, r->second.origin_addr, r->second.origin_seq, "", "", false);
        relays_.erase(r);
      }
      break;
    }
    case wire::Envelope::PING_REQ: {
      const uint64_t s = ++seq_;
      relays_[s] = Relay{reply_to, env.seq(), now + cfg_.probe_interval_ns};
      send(wire::Envelope::PING, env.target_addr(), s, env.target(), env.target_addr(), false);
      break;
    }
    case wire::Envelope::SYNC_REQ:
      send(wire::Envelope::SYNC, reply_to, env.seq(), "", "", true, env.sent_ns());
      break;
    case wire::Envelope::SYNC:
    case wire::Envelope::GOSSIP:
      break;  // their updates are already merged
    default:
      if (on_other_ && timed) on_other_(reply_to, env.kind(), bytes);
      break;
  }
}

void Membership::start_probe(int64_t now) {
  for (size_t tries = 0; tries < probe_order_.size(); ++tries) {
    if (probe_pos_ >= probe_order_.size()) {
      probe_pos_ = 0;
      std::shuffle(probe_order_.begin(), probe_order_.end(), rng_);
    }
    const std::string& id = probe_order_[probe_pos_++];
    auto it = members_.find(id);
    if (it == members_.end() || !it->second.live()) continue;
    probe_ = Probe{id, ++seq_, now, false, false};
    send(wire::Envelope::PING, it->second.addr, probe_->seq, id, it->second.addr, false);
    return;
  }
}

uint64_t Membership::ping_all() {
  const uint64_t first = seq_ + 1;
  for (const auto& [id, m] : members_)
    if (m.live()) send(wire::Envelope::PING, m.addr, ++seq_, id, m.addr, false);
  return first;
}

size_t Membership::ping_unheard(uint64_t epoch) {
  size_t n = 0;
  for (const auto& [id, m] : members_) {
    if (!m.live() || heard_epoch(id) == epoch) continue;
    send(wire::Envelope::PING, m.addr, ++seq_, id, m.addr, false);
    ++n;
  }
  return n;
}

int64_t Membership::settle_time(int64_t now) {
  std::vector<std::string> live;
  for (const auto& [id, m] : members_)
    if (m.live()) live.push_back(id);
  const std::optional<int64_t> delta = time_.decide(now, live);
  if (!delta) return 0;
  if (*delta != 0) rebase(*delta);
  if (on_time_) on_time_(*delta);
  return *delta;
}

void Membership::rebase(int64_t d) {
  now_ += d;
  time_.rebase(d);
  next_probe_ns_ += d;
  next_sync_ns_ += d;
  last_sync_ns_ += d;
  last_heard_ns_ += d;
  next_seed_ns_ += d;
  next_gossip_ns_ += d;
  if (probe_) probe_->sent_ns += d;
  for (auto& [seq, r] : relays_) r.expires_ns += d;
  for (auto& [id, m] : members_) {
    m.changed_ns += d;
    if (m.acked_ns != 0) m.acked_ns += d;
  }
}

void Membership::tick(int64_t now) {
  now_ = now;
  if (!time_.settled()) now += settle_time(now);
  if (leaving_) return;
  // Probe: no ack by the end of its interval makes the target a suspect.
  if (probe_ && !probe_->acked && !probe_->indirect_sent &&
      now - probe_->sent_ns >= cfg_.probe_timeout_ns) {
    auto it = members_.find(probe_->target);
    if (it != members_.end()) {
      for (const Member* m :
           random_live(static_cast<size_t>(cfg_.indirect_checks), probe_->target)) {
        send(wire::Envelope::PING_REQ, m->addr, probe_->seq, it->second.id, it->second.addr, false);
      }
    }
    probe_->indirect_sent = true;
  }
  if (now >= next_probe_ns_) {
    if (probe_ && !probe_->acked) {
      auto it = members_.find(probe_->target);
      if (it != members_.end() && it->second.state == MemberState::kAlive) {
        suspect(it->second, it->second.incarnation, self_.id, now);
      } else if (it != members_.end() && it->second.state == MemberState::kSuspect &&
                 it->second.accusers.insert(self_.id).second) {
        Member copy = it->second;  // we confirm someone else's suspicion
        copy.accuser = self_.id;
        broadcast(copy);
      }
    }
    probe_.reset();
    start_probe(now);
    next_probe_ns_ = now + cfg_.probe_interval_ns;
  }
  // Suspects not refuted in time are dead; the long dead are forgotten. (Only the members
  // not alive are visited, in id order: walking every member every tick made each node's
  // upkeep grow with the cluster — at 1,000 nodes the simulator spent its time here.)
  for (auto it = unsettled_.begin(); it != unsettled_.end();) {
    auto found = members_.find(*it);
    if (found == members_.end()) {
      it = unsettled_.erase(it);
      continue;
    }
    Member& m = found->second;
    if (m.state == MemberState::kSuspect && now - m.changed_ns >= suspicion_timeout(m)) {
      set_state(m, MemberState::kDead, m.incarnation, now);
    }
    if (!m.live() && now - m.changed_ns >= cfg_.reap_after_ns) {
      probe_order_.erase(std::remove(probe_order_.begin(), probe_order_.end(), *it),
                         probe_order_.end());
      members_.erase(found);
      ++version_;
      it = unsettled_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = relays_.begin(); it != relays_.end();) {
    it = it->second.expires_ns <= now ? relays_.erase(it) : std::next(it);
  }
  // Gossip: pending updates to a few random members, beyond what probes carry.
  if (now >= next_gossip_ns_) {
    if (!queue_.empty()) {
      for (const Member* m : random_live(static_cast<size_t>(cfg_.gossip_fanout), "")) {
        send(wire::Envelope::GOSSIP, m->addr, ++seq_, "", "", false);
        if (queue_.empty()) break;
      }
    }
    next_gossip_ns_ = now + cfg_.gossip_interval_ns;
  }
  // Anti-entropy: swap whole views with one random live member now and then, and with
  // one member we think dead, so both sides of a healed partition find each other.
  if (now >= next_sync_ns_ || (now - last_sync_ns_ >= cfg_.backlog_sync_interval_ns &&
                               version_ != version_at_sync_ && backlogged())) {
    for (const Member* m : random_live(1, "")) {
      send(wire::Envelope::SYNC_REQ, m->addr, ++seq_, "", "", true);
    }
    std::vector<const Member*> dead;
    for (const auto& [id, m] : members_)
      if (m.state == MemberState::kDead) dead.push_back(&m);
    if (!dead.empty()) {
      const Member* m = dead[rng_() % dead.size()];
      send(wire::Envelope::SYNC_REQ, m->addr, ++seq_, "", "", true);
    }
    next_sync_ns_ = now + cfg_.sync_interval_ns;
    last_sync_ns_ = now;
    version_at_sync_ = version_;
  }
  // Alone (the seeds were not up yet, or everyone else is gone): keep knocking.
  if (!seeds_.empty() && now >= next_seed_ns_) {
    bool alone = true;
    for (const auto& [id, m] : members_) alone = alone && !m.live();
    if (alone) {
      for (const auto& a : seeds_) send(wire::Envelope::SYNC_REQ, a, ++seq_, "", "", true);
    }
    next_seed_ns_ = now + cfg_.seed_retry_ns;
  }
}

}  // namespace fg
