// One flight: the shard ops and the forwarded requests that the doors of one I/O thread
// produced during one turn of its event loop. It goes out as one message per touched shard
// and one peer request per owner, however many connections took part; each of them hears
// back once the parts its own requests ride in are done.
#pragma once
#include <google/protobuf/arena.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "forward.pb.h"
#include "limit_spec.hpp"
#include "shard_op.hpp"

namespace fg {

// The requests of one flight for one other node. Its messages live on an arena whose first
// block the call keeps: building a batch of a hundred requests and reading their answers
// costs no allocation per request (a heap message would allocate each request's limit
// afresh after every Clear()), and readying the call for the next flight is one Reset().
struct ForwardCall {
  ForwardCall() : m_(std::make_unique<Messages>()) {}

  std::string node_id;
  std::string peer_addr;
  std::vector<LimitSpec> specs;  // per request: the limit it was resolved to (fail modes,
                                 // metrics), kept here rather than sent
  // Set once the call completes (on any thread; read after the flight completes):
  bool ok = false;
  std::string body;  // ok: the owner's ForwardOutcomes; else why there is none
  // Decoded on the I/O thread, on first use.
  bool decoded = false;

  forward::ForwardBatch& batch() { return *m_->batch; }  // what goes out
  const forward::ForwardBatch& batch() const { return *m_->batch; }
  forward::ForwardOutcomes& outcomes() { return *m_->outcomes; }
  const forward::ForwardOutcomes& outcomes() const { return *m_->outcomes; }

  // Ready for the next flight, keeping its arena's first block and its buffers (within
  // bounds: what grew large is let go).
  void reset() {
    node_id.clear();
    peer_addr.clear();
    m_->reset();
    specs.clear();
    ok = false;
    if (body.capacity() > 65536) {
      std::string().swap(body);
    } else {
      body.clear();
    }
    decoded = false;
  }

 private:
  struct Messages {
    static constexpr size_t kFirstBlock = 16384;
    alignas(16) char first[kFirstBlock];
    google::protobuf::Arena arena{options(first)};
    forward::ForwardBatch* batch = make<forward::ForwardBatch>();
    forward::ForwardOutcomes* outcomes = make<forward::ForwardOutcomes>();

    static google::protobuf::ArenaOptions options(char* block) {
      google::protobuf::ArenaOptions o;
      o.initial_block = block;
      o.initial_block_size = kFirstBlock;
      o.start_block_size = 16384;
      o.max_block_size = 65536;
      return o;
    }
    template <class M>
    M* make() {
      return google::protobuf::Arena::CreateMessage<M>(&arena);
    }
    void reset() {
      arena.Reset();  // (blocks past the first go back to the heap)
      batch = make<forward::ForwardBatch>();
      outcomes = make<forward::ForwardOutcomes>();
    }
  };
  std::unique_ptr<Messages> m_;
};

// A flight's forward calls: a vector whose elements outlive clear(). emplace_back hands a
// cleared element out again, reset, with what it allocated: a flight's calls cost no
// allocation for their messages once the flights are warm.
class ForwardCalls {
 public:
  ForwardCall& emplace_back() {
    if (used_ == calls_.size()) {
      calls_.emplace_back();
    } else {
      calls_[used_].reset();
    }
    return calls_[used_++];
  }
  size_t size() const { return used_; }
  bool empty() const { return used_ == 0; }
  ForwardCall& operator[](size_t i) { return calls_[i]; }
  const ForwardCall& operator[](size_t i) const { return calls_[i]; }
  ForwardCall* begin() { return calls_.data(); }
  ForwardCall* end() { return calls_.data() + used_; }
  const ForwardCall* begin() const { return calls_.data(); }
  const ForwardCall* end() const { return calls_.data() + used_; }
  void clear() {
    used_ = 0;
    if (calls_.size() > 16) calls_.resize(16);  // (a flight to many owners at once)
  }

 private:
  std::vector<ForwardCall> calls_;
  size_t used_ = 0;
};

// Storage a flight's ops use, kept from one flight to the next (flights are reused): the
// common data command costs no allocation for its argument list or its reply. What grew
// large (a big KEYS reply) is given back when the flight is cleared.
template <class T>
class Recycled {
 public:
  T& next() {
    if (used_ == blocks_.size() * kBlock) blocks_.push_back(std::make_unique<T[]>(kBlock));
    T& t = blocks_[used_ / kBlock][used_ % kBlock];
    ++used_;
    return t;
  }
  template <class Trim>
  void clear(Trim&& trim) {
    for (size_t i = 0; i < used_; ++i) trim(blocks_[i / kBlock][i % kBlock]);
    used_ = 0;
  }

 private:
  static constexpr size_t kBlock = 64;
  std::vector<std::unique_ptr<T[]>> blocks_;  // (blocks: elements stay put while it grows)
  size_t used_ = 0;
};

struct Flight {
  BatchPtr batch = std::make_shared<Batch>();
  ForwardCalls forwards;
  // Fanned-out requests (heartbeat, release-all): each part is (call, item).
  std::vector<std::pair<uint32_t, uint32_t>> fanout;
  std::deque<std::string> strings;                // made while routing (BOUND holder names)
  Recycled<std::vector<std::string_view>> argvs;  // data commands' words, per shard op
  Recycled<DataReply> replies;                    // data commands' answers
  std::deque<DataReply> forwarded;                // data commands' answers from other nodes
  std::deque<uint8_t> aborts;  // per transaction (Request::txn - 1): a watched key changed
  // The calls requests joined since the last waiter joined (a bit per call; the last bit
  // stands for every call past the 63rd): the calls the next waiter to join waits for.
  uint64_t touched_calls = 0;

  void touch_call(size_t call) { touched_calls |= uint64_t{1} << (call < 63 ? call : 63); }

  // A transaction of this flight: its id for Request::txn.
  uint32_t open_txn() {
    aborts.push_back(0);
    return static_cast<uint32_t>(aborts.size());
  }
  // The ops from `first` on run as one step, even where they lie on several shards.
  void atomic_from(size_t first) {
    uint64_t shards = 0;
    for (size_t i = first; i < batch->ops.size(); ++i)
      if (batch->ops[i].shard < kMaxShards) shards |= uint64_t{1} << batch->ops[i].shard;
    if (__builtin_popcountll(shards) > 1) batch->step_shards |= shards;
  }

  // These shards (a bit each) run the batch's ops as one step, whether or not each has an op
  // of its own (a command's keys on several shards, run by one op).
  void hold_together(uint64_t shards) {
    if (__builtin_popcountll(shards) > 1) batch->step_shards |= shards;
  }

  // The batch runs as one step over all `shards` of the node (a script that may touch any key).
  void atomic_all(size_t shards) {
    if (shards > 1) batch->step_shards |= shards >= 64 ? ~uint64_t{0} : (uint64_t{1} << shards) - 1;
  }

  bool empty() const { return batch->ops.empty() && forwards.empty(); }
  void clear() {
    batch->ops.clear();
    batch->step_shards = 0;
    aborts.clear();
    touched_calls = 0;
    forwards.clear();
    fanout.clear();
    strings.clear();
    argvs.clear([](std::vector<std::string_view>& w) {
      if (w.capacity() > 64) std::vector<std::string_view>().swap(w);
    });
    replies.clear([](DataReply& r) {
      if (r.items.capacity() > 16) {
        std::vector<ReplyItem>().swap(r.items);
      } else {
        r.items.clear();
      }
    });
    forwarded.clear();
  }
};

}  // namespace fg
