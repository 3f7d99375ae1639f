// How every node comes to hold the same slot table. The lowest live id is the
// coordinator: once the live set has been stable for `settle_ns` and differs from the
// table's members, it plans the next table. Every gossip message advertises the sender's
// table (epoch, planner); a node that sees a newer one asks that sender for it. Newer
// means higher epoch, then lower planner id. Split views may plan rival tables; when they
// meet, the rule picks one and the coordinator of the merged view replans. Only a side
// that sees a quorum of the current table's members plans (SlotTable::quorum): a node cut
// off from the rest does not take the slots of the nodes it cannot see.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "membership.hpp"
#include "slot_table.hpp"

namespace fg {

class TableAgreement {
 public:
  using ChangeFn = std::function<void(const SlotTable& before, const SlotTable& after)>;

  TableAgreement(Membership& m, int64_t settle_ns = 1'000'000'000);

  void tick(int64_t now_ns);
  const SlotTable& table() const { return table_; }
  // A member advertised a table of a higher epoch than ours, not yet fetched: the cluster
  // went on without this node's view (it was cut off), so what it owns by its own table
  // may be another's by now — it must not serve until it has the newer one.
  bool behind() const { return want_epoch_ > table_.epoch(); }
  // Called on this node's thread whenever it adopts a table (its own plan or a peer's).
  void on_change(ChangeFn fn) { on_change_ = std::move(fn); }
  // Adopts `t` (if it is newer) and sends it straight to every live member: a leaving
  // node hands its slots over without waiting for the coordinator to notice.
  void propose(SlotTable t);
  // Copies of each slot's state the tables this node plans keep (owner included).
  void set_replicas(size_t r) { replicas_ = r; }
  // A peer's answer named the table it holds (bus address `from`): fetched if newer, as an
  // advert is. (A leaving node hears no gossip adverts: the others stopped telling it.)
  void heard_table(const std::string& from, uint64_t epoch, const std::string& planner) {
    on_advert(from, epoch, planner);
  }
  // Asks the member at `addr` for its table (adopted if newer): a leaving node, which hears
  // no adverts, keeps up with the tables that decide where what it holds goes.
  void ask_table(const std::string& addr);

 private:
  void adopt(SlotTable t);
  void on_advert(const std::string& from, uint64_t epoch, const std::string& planner);
  void on_message(const std::string& from, int kind, std::string_view bytes);
  void send_table(const std::string& to);

  Membership& m_;
  int64_t settle_ns_;
  SlotTable table_;
  bool table_balanced_ = true;  // table_.balanced()
  std::vector<std::string> last_live_;
  uint64_t live_version_ = ~uint64_t{0};  // the membership's version last_live_ is of
  int64_t live_since_ns_ = 0;
  // The best table seen advertised and not yet fetched, and when we last asked for it.
  uint64_t want_epoch_ = 0;
  std::string want_planner_, want_from_;
  int64_t asked_ns_ = 0;
  int64_t now_ns_ = 0;
  int64_t adopted_ns_ = 0;
  size_t replicas_ = 2;
  ChangeFn on_change_;
};

}  // namespace fg
