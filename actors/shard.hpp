// The keys of one shard and what requests do to them: pure logic, driven by a shard actor
// (or directly by tests) with an explicit `now`. One class, its code in a file per idea:
// dispatch (shard.cpp), expiry (shard_expiry.cpp), leases and reservations
// (shard_leases.cpp), state moving between nodes (shard_transfer.cpp), data commands
// (data_*.cpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "accounts.hpp"
#include "entry_snapshot.hpp"
#include "entry_weight.hpp"
#include "holder_index.hpp"
#include "key_events.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "key_waiters.hpp"
#include "packed_state.hpp"
#include "scan_args.hpp"
#include "script_host.hpp"
#include "shard_op.hpp"

namespace fg {

struct ZSetValue;

// Figures a shard publishes for readers on other threads (INFO, DBSIZE).
struct ShardStats {
  std::atomic<int64_t> keys{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> expired{0};
  std::atomic<int64_t> leases{0};  // live concurrency leases (a replica's copies included)
  std::atomic<int64_t> queued{0};  // batches sent to the shard, not yet run (mailbox depth)
};

struct Ticket {
  std::string key;
  LimitSpec spec;
  int64_t cost = 0;
  int64_t taken_ns = 0;
  int64_t expires_ns = 0;
};

class Shard {
 public:
  Shard(size_t max_keys, uint64_t lease_seed, ShardStats* stats = nullptr);

  // One op (op.hash must be KeyTable::hash(op.key)), its charges to accounts handed over.
  void execute(ShardOp& op, int64_t now_ns) {
    execute_one(op, now_ns);
    table_.flush_charges();
  }
  // Runs one op of a batch here (op.hash set): answers kNotOwner for a slot this shard
  // does not serve, skips it if its transaction was aborted, else executes it.
  void execute_one(ShardOp& op, int64_t now_ns);  // (a batch's: charges gathered)
  void run_op(ShardOp& op, int64_t now_ns);
  // Runs a multi-shard step (shard_op.hpp's Step): every op of `ops` that belongs to one of
  // `step`'s shards, in order, on that shard — each of which must be parked.
  static void execute_step(std::vector<ShardOp>& ops, const Step& step, int64_t now_ns);
  // Runs every op of `ops` that belongs to shard `id` (or to all shards): hashes their
  // keys, prefetches them, then executes in order.
  void execute_batch(std::vector<ShardOp>& ops, uint16_t id, int64_t now_ns);
  // Erases up to `budget` slots' worth of idle keys; returns how many went.
  size_t sweep(int64_t now_ns, size_t budget);
  // The sweeper's pace (the actor's timer): a tick owes `budget` slots, or four for every
  // key inserted since the last tick if more, so that a pass over the table ends before the
  // keys new in it fill a quarter of it — else the part ahead of the cursor fills with dead
  // keys, its runs grow without bound and every probe there with them — and at most the
  // whole table, plus what the last tick left unpaid. The tick is paid a round at a time (the
  // gate is let go between rounds so batches run) — by the actor, or on a busy node by the
  // batches run in place, a round after each; a round that finds plenty to reclaim earns
  // another, up to 16 a tick.
  void sweep_tick(size_t budget);
  // One round of up to `budget` slots; whether another is due at once.
  bool sweep_round(int64_t now_ns, size_t budget);
  bool sweep_owed() const { return sweep_owed_ > 0; }
  void publish();

  // The live state of every key whose slot satisfies `want`; with `remove`, those keys
  // leave this shard (a hand-off) — or, with `keep` too, stay as a copy it does not serve
  // (a hand-off's spare); without, they stay (a copy, for replicas).
  std::vector<EntrySnapshot> extract(const std::function<bool(uint32_t slot)>& want, int64_t now_ns,
                                     bool remove, bool keep = false);
  // Appends the live state of every key of hash part `part` of `parts` (KeyTable::
  // for_each_in_part), served or a replica's copy, to `out`: one step of a copy of the whole
  // shard that lets other work run between its steps.
  void copy_part(uint32_t part, uint32_t parts, int64_t now_ns, std::vector<EntrySnapshot>& out);
  // Installs snapshots, replacing any state the keys had here; malformed ones are
  // skipped. Not bound by the key cap: state that moves must not be lost on the way.
  void install(const std::vector<EntrySnapshot>& entries);
  // Merges copies from elsewhere into the keys of slots this shard serves (merge.hpp's rules;
  // a key absent here is installed), as changes the replication stream carries. Copies of
  // slots it does not serve are moved to `refused`. Leases (concurrency keys) are taken only
  // for `fresh` slots, ones this node started serving from nothing (see the .cpp). Returns
  // how many keys changed.
  // With `fresh_only`, keys of other slots are dropped whatever their kind (a snapshot older
  // than the copies the cluster kept: only slots that lost every copy take it).
  // Keys of `into_copies` slots, which it does not serve, are merged into its copy of them
  // (leases too): a node gathering every copy of slots before it serves them.
  size_t merge(std::vector<EntrySnapshot>& entries, int64_t now_ns,
               std::vector<EntrySnapshot>& refused, const SlotBits& fresh, bool fresh_only = false,
               const SlotBits* into_copies = nullptr);

  // Cluster mode: the shard serves only the slots it has been given; ops on others are
  // answered kNotOwner, never run. Out of cluster mode every slot is served. It also
  // remembers which keys requests changed, for the replication stream.
  void enable_ownership() { owned_ = std::make_unique<SlotBits>(); }
  // Where keys are charged, and the caps held against the charges: maxmemory, each user's
  // share of keys and bytes (accounts.hpp). Null: nothing charged or capped but max-keys.
  // (Shared: a shard actor may outlive the node that made it, and its keys are given back
  // as it goes.)
  void set_accounts(std::shared_ptr<Accounts> a) {
    accounts_owner_ = std::move(a);
    accounts_ = accounts_owner_.get();
    table_.set_accounts(accounts_);
  }
  // The longest string APPEND and SETRANGE may make (proto-max-bulk-len: one argument can
  // be no longer, so neither can a value grown a piece at a time).
  void set_max_string(size_t bytes) { max_string_.store(bytes, std::memory_order_relaxed); }
  // Appends the keys changed since the last call to `out` (packed records, erased keys as
  // records saying so, snapshots of the kinds not packed), forgetting them. out.complete
  // turns false if more changed than could be tracked: replicas need a full copy.
  void collect_dirty(ShardChanges& out, int64_t now_ns);
  // The most changed keys a round lists (past it, the replicas are sent whole copies).
  void set_max_dirty(size_t keys) { max_dirty_ = keys; }
  // Another node's state kept here as its replica: installs `entries` and applies the
  // packed records of `packed` (packed_state.hpp; read and checked already): changed keys
  // and erased ones. Slots this shard serves are never touched.
  void apply_replica(const std::vector<EntrySnapshot>& entries, std::string_view packed);
  // Erases every key of `slots` this shard does not serve (an old copy, before a new one).
  void clear_unowned(const SlotBits& slots);
  void set_owned(const SlotBits& slots, bool owned);
  bool owns(uint32_t slot) const { return !owned_ || owned_->test(slot); }

  // Runs a data op a script sent (op.hash set), as if it came from a client; one over
  // several keys reaches the shards of the others through `step` (the script's).
  void script_call(ShardOp& op, int64_t now_ns, const Step* step = nullptr) {
    const Step* outer = step_;
    if (step) step_ = step;
    data(op, now_ns);
    step_ = outer;
  }
  // Where clients blocked on keys wait (BLPOP): told of every change of a list or sorted set.
  void set_waiters(KeyWaiters* w) { waiters_ = w; }
  // This shard's place in its pool: which of how many (a key's shard is its slot modulo
  // the count).
  void set_place(uint16_t id, uint16_t count) {
    id_ = id;
    pool_size_ = count;
  }
  // Scripts: the host that runs them (api/script), and this shard's place in the pool.
  void attach_scripts(ScriptHost* host, uint16_t id) {
    scripts_ = host;
    id_ = id;
  }
  ScriptHost* scripts() const { return scripts_; }
  // For a script that may have to be undone (one that ran past its budget): the key's
  // state before the script first changed it (nothing if it had none), and putting it back
  // (for the replication stream and WATCH like any change).
  bool save_key(std::string_view key, int64_t now_ns, EntrySnapshot& out);
  void restore_key(std::string_view key, const EntrySnapshot* before);

  const KeyTable& table() const { return table_; }
  size_t open_reservations() const { return tickets_.size(); }
  size_t key_count() const { return table_.size(); }

 private:
  // Dispatch (shard.cpp).
  Entry* get_or_create(ShardOp& op, Kind kind, int64_t now_ns);
  // Whether a new key fits under the caps (sweeping idle ones first): max-keys, maxmemory,
  // the asking user's shares; else the status says which (kKeyLimit, kNoMemory, ...).
  bool room_for_key(ShardOp& op, int64_t now_ns);
  // Whether a data command that grows memory (Redis's denyoom) may run: the node under
  // maxmemory, the asking user under its share of bytes; else the status says which.
  bool room_to_grow(ShardOp& op);
  void take(ShardOp& op, int64_t now_ns);
  void reserve_wait(Entry& e, ShardOp& op, int64_t now_ns);  // FG.TAKE ... WAIT
  static void charge(Entry& e, const LimitSpec& spec, int64_t delta, int64_t now_ns);
  // EVAL and its kin, through the host: with `step`'s shards, else this one alone.
  void run_script(ShardOp& op, const Step* step, int64_t now_ns);
  uint64_t next_lease_id();
  uint64_t next_random();  // SPOP, SRANDMEMBER: a different number each call
  // The places (0 .. size-1, size > 0) a random pick of `count` (> 0) takes: with `distinct`
  // min(count, size) different ones (every place, in order, when count >= size), else
  // `count` independent picks (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER; data_set.cpp).
  std::vector<uint32_t> random_places(size_t size, int64_t count, bool distinct);

  // Expiry (shard_expiry.cpp).
  // Whether the key's state is as good as absent: its deadline passed, a limiter back at
  // rest, every lease expired, a container emptied. A query: it changes nothing.
  bool idle(const Entry* e, int64_t now_ns) const;
  // The expire step: a concurrency key's expired leases leave it (and the holder index);
  // an entry past its deadline gives all of them up. True when the entry is idle after
  // it, for the caller to erase.
  bool expire(Entry* e, int64_t now_ns);
  static bool past_deadline(const Entry* e, int64_t now_ns);  // (a key's EXPIRE, not idleness)
  void drop_leases(Entry* e);  // a concurrency key that expires with leases in it
  void forget(std::string_view key, uint64_t hash);

  // Leases and reservations (shard_leases.cpp).
  void leases(ShardOp& op, int64_t now_ns);
  void heartbeat(ShardOp& op, int64_t now_ns);  // and kReleaseHolder
  void reserve(ShardOp& op, int64_t now_ns);    // kReserve, kCommit, kCancel
  void adjust(ShardOp& op, int64_t now_ns);     // kAdjust (FG.ADJUST)
  // Gives back what a reservation took, if its key still holds the same kind here.
  void refund(const Ticket& t, int64_t now_ns);
  void expire_tickets(int64_t now_ns);

  // Data commands (data_ops.cpp, unless named): data() runs the op's row's function (the
  // table, data_cmd.cpp, names these).
  friend struct DataCmdTable;
  void data(ShardOp& op, int64_t now_ns);
  void data_eval(ShardOp& op, int64_t now_ns);  // EVAL and its kin (run_script)
  void data_string(ShardOp& op, int64_t now_ns);
  void data_string_edit(ShardOp& op, int64_t now_ns);  // data_strings.cpp
  void data_set(ShardOp& op, int64_t now_ns);
  void data_getex(ShardOp& op, int64_t now_ns);
  void data_incr(ShardOp& op, int64_t now_ns);
  void data_increx(ShardOp& op, int64_t now_ns);
  void data_object(ShardOp& op, int64_t now_ns);  // data_keyspace.cpp
  void data_expire(ShardOp& op, int64_t now_ns);
  void data_keys(ShardOp& op, int64_t now_ns);
  void data_scan(ShardOp& op, int64_t now_ns);        // KEYS, SCAN
  void data_random_key(ShardOp& op, int64_t now_ns);  // RANDOMKEY: one shard's pick
  void data_hash(ShardOp& op, int64_t now_ns);        // data_hash.cpp
  void hash_scan(ShardOp& op, int64_t now_ns);        // HSCAN (data_hash.cpp)
  // HSCAN, SSCAN, ZSCAN's start: the cursor and the key checked, then the options read. False
  // when the key is missing (answered: an empty page, and the end) or something was refused.
  bool scan_key(ShardOp& op, Kind kind, int64_t now_ns, Entry*& e, uint64_t& cursor,
                ScanArgs& args);
  void random_fields(ShardOp& op, int64_t now_ns);     // HRANDFIELD, ZRANDMEMBER (data_set.cpp)
  void data_zset(ShardOp& op, int64_t now_ns);         // data_zset.cpp
  void zset_scan(ShardOp& op, int64_t now_ns);         // ZSCAN (data_zset.cpp)
  void data_list(ShardOp& op, int64_t now_ns);         // data_list.cpp
  void list_pos(ShardOp& op, int64_t now_ns);          // LPOS (data_list.cpp)
  void data_sets(ShardOp& op, int64_t now_ns);         // data_set.cpp
  void set_random(ShardOp& op, int64_t now_ns);        // SPOP, SRANDMEMBER (data_set.cpp)
  void set_scan(ShardOp& op, int64_t now_ns);          // SSCAN (data_set.cpp)
  void data_stream(ShardOp& op, int64_t now_ns);       // XADD XLEN XRANGE ... (data_stream.cpp)
  void stream_read(ShardOp& op, int64_t now_ns);       // XREAD XREADGROUP (data_stream.cpp)
  void stream_info(ShardOp& op, int64_t now_ns);       // XINFO (data_stream.cpp)
  void stream_group(ShardOp& op, int64_t now_ns);      // XGROUP (data_stream_groups.cpp)
  void stream_ack(ShardOp& op, int64_t now_ns);        // XACK (data_stream_groups.cpp)
  void stream_pending(ShardOp& op, int64_t now_ns);    // XPENDING (data_stream_groups.cpp)
  void stream_claim(ShardOp& op, int64_t now_ns);      // XCLAIM (data_stream_groups.cpp)
  void stream_autoclaim(ShardOp& op, int64_t now_ns);  // XAUTOCLAIM (data_stream_groups.cpp)
  void data_bits(ShardOp& op, int64_t now_ns);         // SETBIT GETBIT ... BITFIELD (data_bits.cpp)
  void bit_op(ShardOp& op, int64_t now_ns);            // BITOP (data_bits.cpp)
  void lcs(ShardOp& op, int64_t now_ns);               // LCS (data_bits.cpp)
  // Commands over several keys as one op (data_multi.cpp): whether this step holds every
  // key's shard (else -CROSSSLOT's kin, kKeysApart, answered).
  bool holds_keys(ShardOp& op);
  void set_algebra(ShardOp& op, int64_t now_ns);  // SINTER SUNION SDIFF, their STOREs, SINTERCARD
  void set_move(ShardOp& op, int64_t now_ns);     // SMOVE
  void rename(ShardOp& op, int64_t now_ns);       // RENAME RENAMENX COPY
  void list_move(ShardOp& op, int64_t now_ns);    // RPOPLPUSH LMOVE
  void mset_nx(ShardOp& op, int64_t now_ns);      // MSETNX
  // ZUNION ZINTER ZDIFF, their STOREs, ZINTERCARD; ZRANGESTORE (data_zset.cpp)
  void zset_algebra(ShardOp& op, int64_t now_ns);
  void zset_range_store(ShardOp& op, int64_t now_ns);
  void multi_pop(ShardOp& op, int64_t now_ns);  // ZMPOP LMPOP BZMPOP BLMPOP (data_zset.cpp)
  void block_pop(ShardOp& op, int64_t now_ns);  // BLPOP BRPOP BZPOPMIN BZPOPMAX (data_zset.cpp)
  void pop_first(ShardOp& op, size_t first, size_t end, bool zset, bool low, int64_t count,
                 bool nested, int64_t now_ns);
  void store_zset(ShardOp& op, std::string_view dst, ZSetValue&& z, int64_t now_ns);
  // A store's destination (SINTERSTORE, ZUNIONSTORE, ...): whatever it held goes, its TTL too;
  // an `empty` result deletes it and answers 0 (null). Else a fresh entry of `kind` for the
  // caller to fill, mark and answer; null at the key cap (op.status says).
  Entry* fresh_destination(ShardOp& op, std::string_view dst, Kind kind, bool empty,
                           int64_t now_ns);
  // A new key of a data command (keyspace notifications' "new").
  Entry* insert_key(std::string_view key, uint64_t h, Kind kind, uint16_t account) {
    if (t_key_events) log_event(notify::kNew, "new", key, false);
    return table_.insert(key, h, kind, account);
  }
  // The shard that holds `key` in this op's step (this one, or one held with it); null if
  // none does (the request core holds every key's shard: not expected).
  Shard* holder_of(std::string_view key);
  void data_watch(ShardOp& op, int64_t now_ns);  // WATCH, its check and release (data_keyspace.cpp)
  void data_flush(ShardOp& op, int64_t now_ns);  // FLUSHALL, FLUSHDB
  // The key's live entry of a data `kind`: null if absent (created empty when `create`),
  // or -WRONGTYPE / the key cap in op.status.
  Entry* typed(ShardOp& op, Kind kind, bool create, int64_t now_ns);
  // The key's live entry, or null; state gone idle (an expired deadline, a limiter back at
  // rest) is forgotten on the way, as Redis expires keys on access.
  Entry* lookup(std::string_view key, uint64_t h, int64_t now_ns);
  // A fresh string entry for `key`, replacing whatever it held (the deadline kept if asked);
  // null at the key cap (op.status says so).
  Entry* overwrite_string(ShardOp& op, std::string_view key, uint64_t h, std::string_view value,
                          bool keep_ttl, int64_t now_ns);
  // When the key goes: its deadline, or for a limiter the moment it is back at rest if that
  // is sooner (Unix ms); -1 for a string without one.
  static int64_t expires_ms(const Entry& e);

  // Moving state (shard_transfer.cpp).
  void install_one(const EntrySnapshot& s);  // erase, keeping the holder index right (and
                                             // charged to the snapshot's account)
  void install_packed(const PackedRecord& r,
                      uint64_t hash);  // in place when the key holds the same kind
  void note_dirty(std::string_view key);

  // A served key changed (or went): for the replication stream, and for WATCH.
  void mark(Entry* e, std::string_view key) {
    if (t_key_events) log_changed(key, false);  // (keyspace notifications: key_events.hpp)
    if (weight_varies(e->kind)) table_.recharge(e, entry_weight(*e));
    if (owned_ && !(e->flags & kEntryDirty)) {
      e->flags |= kEntryDirty;
      note_dirty(key);
    }
    if (!watch_.empty()) touch(key);
    // (a list or sorted set that changed may have what a blocked client waits for; a
    // stream's new entries are for every client reading it)
    if (waiters_ && waiters_->any() &&
        (e->kind == Kind::kList || e->kind == Kind::kZSet || e->kind == Kind::kStream))
      waiters_->ready(key, e->kind == Kind::kStream);
  }
  // After elements were taken from a container: it goes when `empty` (as Redis deletes an
  // emptied key), else it changed.
  void settle(Entry* e, std::string_view key, uint64_t h, bool empty) {
    if (empty) {
      forget(key, h);
      mark_gone(key);
    } else {
      mark(e, key);
    }
  }
  // (`changed`: by the command; a key found expired is not, and tells so itself)
  void mark_gone(std::string_view key, bool changed = true) {
    if (changed && t_key_events) log_changed(key, true);
    if (owned_) note_dirty(key);
    if (!watch_.empty()) touch(key);
  }
  // WATCH (data_keyspace.cpp): a watched key changed (its version moves on); every watched
  // key did (state replaced wholesale: a hand-off, a replica's copy); watches older than
  // the horizon go.
  void touch(std::string_view key);
  void touch_all();
  void prune_watches(int64_t now_ns);

  static constexpr size_t kMaxDirty = 1 << 22;
  size_t max_dirty_ = kMaxDirty;

  std::shared_ptr<Accounts> accounts_owner_;  // (before the table: it outlives the keys)
  KeyTable table_;
  HolderIndex holders_;
  // Open reservations (all-or-nothing checks over several keys): what each took, so it
  // can be given back when cancelled or when nobody commits it in time. Owner-local:
  // a failover or hand-off keeps what they took (the conservative side).
  std::unordered_map<uint64_t, Ticket> tickets_;
  std::multimap<int64_t, uint64_t> ticket_expiry_;  // expires_ns -> ticket id
  size_t max_keys_;
  std::atomic<size_t> max_string_{512 << 20};  // (read relaxed: CONFIG SET may change it)
  uint64_t lease_seed_;
  uint64_t lease_counter_ = 0;
  uint64_t random_counter_ = 0;
  int64_t leases_ = 0;                     // live leases held in table_
  size_t sweep_owed_ = 0;                  // slots the sweeper still owes this tick
  int sweep_extra_ = 0;                    // rounds earned this tick by finding plenty
  int64_t full_sweep_ns_ = INT64_MIN / 2;  // when room_for_key last swept the whole table
  size_t full_sweep_freed_ = 0;            // and how many keys that freed
  ShardStats* stats_;
  std::unique_ptr<SlotBits> owned_;  // null: every slot
  Accounts* accounts_ = nullptr;
  ScriptHost* scripts_ = nullptr;
  uint16_t id_ = 0;
  uint16_t pool_size_ = 1;
  // The step this shard runs an op in (set around each op of a multi-shard step): the
  // other shards it holds, for an op over several keys (data_multi.cpp).
  const Step* step_ = nullptr;
  KeyWaiters* waiters_ = nullptr;
  // Keys changed since the last collect_dirty, each as a u16 length and its bytes (one
  // buffer: no allocation per key).
  std::string dirty_;
  size_t dirty_count_ = 0;
  bool dirty_overflow_ = false;
  // Watched keys (WATCH): each one's version, how many connections watch it and since when.
  // A version comes from one shard-wide clock that starts at a random point, so a token
  // handed out by another shard or node (the key moved) never matches here.
  struct Watch {
    uint64_t version = 0;
    uint32_t watchers = 0;
    int64_t since_ns = 0;
  };
  std::unordered_map<std::string, Watch> watch_;
  uint64_t watch_clock_;
  int64_t watch_pruned_ns_ = 0;
};

}  // namespace fg
