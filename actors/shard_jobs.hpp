// Work on whole slots across every shard of a node, one message type per kind of work:
// handing slots out (ExtractJob), the replication stream (CollectJob), taking slots in
// (InstallJob) and keeping a replica's copy of another node's slots (ReplicaJob). Each job
// goes to every shard; `done` runs once, on the thread of the last shard to finish.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "entry_snapshot.hpp"
#include "key_slot.hpp"
#include "packed_state.hpp"

namespace fg {

template <class Self>
struct ShardJob {
  std::atomic<int> pending{0};
  std::function<void(Self&)> done;
  // One shard finished its part; the last one runs `done`.
  void finish_one() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1 && done) {
      done(static_cast<Self&>(*this));
    }
  }
};

// Each shard snapshots the live keys of `slots` into its per_shard entry; with `remove`
// (a hand-off, or dropping stale state) the shard stops serving them and they leave it —
// unless `keep`: a hand-off whose sender keeps them as a spare copy until their new owner
// says it holds them (gossip/replicator.hpp). Without `remove` (a whole copy for a replica)
// they stay served. Ops already queued at a shard run first, so the snapshot includes every
// admission made before the slots stopped being served.
struct ExtractJob : ShardJob<ExtractJob> {
  SlotBits slots;
  bool remove = true;
  bool keep = false;
  int64_t now_ns = 0;
  std::vector<std::vector<EntrySnapshot>> per_shard;
};

// Each shard appends to its `parts` entry the keys requests changed in the slots it serves
// since the last such job (ShardChanges: packed records, snapshots of the other kinds). The
// parts are the stream's, reused from round to round; the pool sizes them.
struct CollectJob : ShardJob<CollectJob> {
  std::vector<ShardChanges> parts;
};

// Each shard first drops what it holds (and does not serve) of `clear` — a replica's older
// copy — then installs its per_shard entries and starts serving `slots`.
struct InstallJob : ShardJob<InstallJob> {
  SlotBits slots;
  SlotBits clear;
  std::vector<std::vector<EntrySnapshot>> per_shard;
};

// Another node's state kept here as its replica: each shard drops what it holds (and does
// not serve) of `clear`, installs its entries (snapshots) and applies its packed records
// (changed and erased keys). Slots a shard serves are never touched.
struct ReplicaJob : ShardJob<ReplicaJob> {
  std::optional<SlotBits> clear;  // (none: nothing to clear, as in most updates)
  std::vector<std::vector<EntrySnapshot>> per_shard;
  std::vector<std::string> packed;  // per shard (or empty): packed records, checked already
};

// A copy of every key each shard holds (its served slots and its replica copies), for a save
// to disk: taken in steps of one hash part each (Shard::copy_part), the shard's other work
// running between steps, so no request waits for more than one step (about 8k keys). Each
// key is copied as it is at its step; keys that come and go meanwhile may be in it or not.
struct CopyJob : ShardJob<CopyJob> {
  int64_t now_ns = 0;
  std::vector<std::vector<EntrySnapshot>> per_shard;
};

// Copies of keys that come back from elsewhere (a snapshot loaded from disk, the other side of
// a partition), merged into the slots each shard serves (actors/merge.hpp); keys of slots a
// shard does not serve come back in `refused` (their owner is another node, or not yet this
// one). `merged` counts keys whose state the merge changed or created.
struct MergeJob : ShardJob<MergeJob> {
  SlotBits fresh;           // slots started here from nothing: leases are merged only into these
  bool fresh_only = false;  // and everything else too (Shard::merge)
  // Slots not served here whose copy here the keys are merged into (Shard::merge).
  std::optional<SlotBits> into_copies;
  std::vector<std::vector<EntrySnapshot>> per_shard;
  std::vector<std::vector<EntrySnapshot>> refused;
  std::atomic<size_t> merged{0};
};

using ExtractJobPtr = std::shared_ptr<ExtractJob>;
using MergeJobPtr = std::shared_ptr<MergeJob>;
using CopyJobPtr = std::shared_ptr<CopyJob>;
using CollectJobPtr = std::shared_ptr<CollectJob>;
using InstallJobPtr = std::shared_ptr<InstallJob>;
using ReplicaJobPtr = std::shared_ptr<ReplicaJob>;

}  // namespace fg
