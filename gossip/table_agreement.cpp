// Coordinator planning and table fetches.
#include "table_agreement.hpp"

#include <algorithm>

#include "gossip.pb.h"

namespace fg {

namespace {
constexpr int64_t kRefetchNs = 200'000'000;  // ask again if a table did not arrive by then
}

TableAgreement::TableAgreement(Membership& m, int64_t settle_ns) : m_(m), settle_ns_(settle_ns) {
  m_.on_advert(
      [this](const std::string& from, uint64_t e, const std::string& p) { on_advert(from, e, p); });
  m_.on_other(
      [this](const std::string& from, int kind, std::string_view b) { on_message(from, kind, b); });
}

void TableAgreement::adopt(SlotTable t) {
  SlotTable before = std::move(table_);
  table_ = std::move(t);
  table_balanced_ = table_.balanced();  // (once per table, not per tick: it reads every slot)
  adopted_ns_ = now_ns_;
  m_.set_advert(table_.epoch(), table_.planner());
  if (on_change_) on_change_(before, table_);
}

void TableAgreement::propose(SlotTable t) {
  if (!t.newer_than(table_.epoch(), table_.planner())) return;
  adopt(std::move(t));
  for (const auto& [id, m] : m_.others())
    if (m.live()) send_table(m.addr);
}

void TableAgreement::on_advert(const std::string& from, uint64_t epoch,
                               const std::string& planner) {
  if (epoch == 0) return;
  const bool better_than_ours =
      epoch > table_.epoch() || (epoch == table_.epoch() && planner < table_.planner());
  const bool better_than_wanted =
      epoch > want_epoch_ || (epoch == want_epoch_ && planner < want_planner_);
  if (better_than_ours && (want_epoch_ == 0 || better_than_wanted)) {
    want_epoch_ = epoch;
    want_planner_ = planner;
    want_from_ = from;
    asked_ns_ = 0;  // ask at the next tick
  }
}

void TableAgreement::send_table(const std::string& to) {
  wire::Envelope env;
  env.set_version(1);
  env.set_kind(wire::Envelope::TABLE);
  env.set_from(m_.self().id);
  env.set_from_addr(m_.self().addr);
  env.set_table_epoch(table_.epoch());
  env.set_table_planner(table_.planner());
  env.set_to_addr(to);
  auto* t = env.mutable_table();
  t->set_epoch(table_.epoch());
  t->set_planner(table_.planner());
  for (const auto& id : table_.members()) t->add_member_ids(id);
  for (const SlotRange& r : table_.ranges()) {
    t->add_range_first(r.first);
    t->add_range_owner(r.owner);
  }
  t->set_replicas(static_cast<uint32_t>(table_.replica_count()));
  for (uint64_t e : table_.since()) t->add_member_since(e);
  std::string bytes;
  env.SerializeToString(&bytes);
  m_.transport().send(to, bytes);
}

void TableAgreement::on_message(const std::string& from, int kind, std::string_view bytes) {
  if (kind == wire::Envelope::TABLE_REQ) {
    if (table_.epoch() > 0) send_table(from);
    return;
  }
  if (kind != wire::Envelope::TABLE) return;
  wire::Envelope env;
  if (!env.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !env.has_table()) return;
  const auto& t = env.table();
  const size_t n = static_cast<size_t>(t.member_ids_size());
  if (t.range_first_size() != t.range_owner_size() || t.range_first_size() == 0 ||
      t.range_first(0) != 0 || n == 0 || n > kNoOwner) {
    return;  // malformed: ignore
  }
  std::vector<uint16_t> owners(kSlotCount, kNoOwner);
  for (int i = 0; i < t.range_first_size(); ++i) {
    const uint32_t first = t.range_first(i);
    const uint32_t end = i + 1 < t.range_first_size() ? t.range_first(i + 1) : kSlotCount;
    const uint32_t owner = t.range_owner(i);
    if (first >= end || end > kSlotCount || (owner >= n && owner != kNoOwner)) return;
    for (uint32_t s = first; s < end; ++s) owners[s] = static_cast<uint16_t>(owner);
  }
  SlotTable incoming =
      SlotTable::from_parts(t.epoch(), {t.member_ids().begin(), t.member_ids().end()},
                            std::move(owners), t.replicas() ? t.replicas() : 2,
                            {t.member_since().begin(), t.member_since().end()})
          .stamped(t.epoch(), t.planner());
  // A leaving node has handed its slots away: it never takes a table that gives it some
  // back (one planned before its leave was known); the others replan without it.
  const auto& ids = incoming.members();
  const bool gives_us_slots = std::find(ids.begin(), ids.end(), m_.self().id) != ids.end();
  if (incoming.newer_than(table_.epoch(), table_.planner()) &&
      !(m_.self().state == MemberState::kLeft && gives_us_slots)) {
    adopt(std::move(incoming));
  }
  if (!want_planner_.empty() &&
      !(want_epoch_ > table_.epoch() ||
        (want_epoch_ == table_.epoch() && want_planner_ < table_.planner()))) {
    want_epoch_ = 0;  // got what we wanted (or better)
    want_planner_.clear();
  }
}

void TableAgreement::ask_table(const std::string& addr) {
  wire::Envelope env;
  env.set_version(1);
  env.set_kind(wire::Envelope::TABLE_REQ);
  env.set_from(m_.self().id);
  env.set_from_addr(m_.self().addr);
  env.set_to_addr(addr);
  std::string bytes;
  env.SerializeToString(&bytes);
  m_.transport().send(addr, bytes);
}

void TableAgreement::tick(int64_t now) {
  now_ns_ = now;
  // Fetch a newer table someone advertised.
  if (want_epoch_ > 0 && now - asked_ns_ >= kRefetchNs) {
    ask_table(want_from_);
    asked_ns_ = now;
  }
  // Plan, if we are the coordinator and the live set has settled on something new.
  if (m_.self().state == MemberState::kLeft) return;  // leaving: others plan without us
  if (m_.version() != live_version_) {
    live_version_ = m_.version();
    auto live = m_.live_ids();
    if (live != last_live_) {
      last_live_ = std::move(live);
      live_since_ns_ = now;
    }
  }
  const std::vector<std::string>& live = last_live_;
  // Joins wait for the live set to settle (several nodes starting together make one
  // table, not one each). Departures are final (a member is dead only after its
  // suspicion ran out, or it said it is leaving): replan sooner, its slots are unserved.
  if (live.front() != m_.self().id) return;  // (the lowest live id plans)
  const auto& have = table_.members();
  const bool only_departures =
      table_.epoch() > 0 && std::includes(have.begin(), have.end(), live.begin(), live.end());
  const int64_t settle = only_departures ? settle_ns_ / 5 : settle_ns_;
  if (now - live_since_ns_ < settle) return;
  if (table_.members() == live && table_.epoch() > 0 &&
      (table_balanced_ || now - adopted_ns_ < settle_ns_ / 5)) {
    return;  // (an unbalanced failover table is evened out shortly after)
  }
  if (want_epoch_ > 0) return;  // first learn the newest table, then plan from it
  // A quorum of members known to be alive (a suspect may be dead already: several nodes
  // failing together must not shrink the table one step at a time down to a minority).
  std::vector<std::string> alive{m_.self().id};
  for (const auto& [id, m] : m_.others())
    if (m.state == MemberState::kAlive) alive.push_back(id);
  if (table_.epoch() > 0 && !table_.quorum(alive)) return;
  const uint64_t epoch = table_.epoch() + 1;
  propose(table_.plan(live, replicas_).stamped(epoch, m_.self().id));  // tell everyone now
}

}  // namespace fg
