// The RESP door: one RESP connection's protocol state, with no sockets. Bytes in, commands
// decoded (the command table's handlers) into Requests for the request core or answered
// here, replies out in request order. The node's Connection moves the bytes.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "command_context.hpp"
#include "command_table.hpp"
#include "door_session.hpp"
#include "lease_upkeep.hpp"
#include "request_core.hpp"
#include "resp_parser.hpp"

namespace fg {

class RespSession final : public CommandContext {
 public:
  static constexpr const char* kDoor = "resp";  // (CLIENT LIST's door=)
  RespSession(Services& svc, std::shared_ptr<ClientInfo> client);

  // Parses commands from `data` (unconsumed input). Local commands are answered at once;
  // keyed ones go to the request core and may join `flight` (which may already hold other
  // connections' requests). When none joined, the replies are already in output().
  // Otherwise the caller joins the flight's batcher and calls complete() once it is back.
  // Stops at the end of the input, at max_batch_commands, before a command that changes the
  // session or reads shard state (HELLO, AUTH, QUIT, DBSIZE, INFO) when keyed work is
  // pending, before a command whose slot's state is arriving here, and at a protocol error.
  ProcessResult process(const char* data, size_t len, Flight& flight);
  // After the flight is back: appends every reply of the last process() call, in order.
  void complete(Flight& flight);

  // The connection shell's terms (door_session.hpp): commands are parsed in place (their
  // words view the input until the flight is back); one command may be as large as
  // max-query-bytes; nothing is pushed, so the deadlines are checked once a second.
  static constexpr bool kViewsInput = true;
  static constexpr size_t kInitialInput = 16 * 1024;
  static size_t max_input(size_t max_query_bytes) { return max_query_bytes; }
  static constexpr char kClientWord[] = "client";  // in the log: "<word> <addr> dropped"
  static constexpr int64_t kTickMs = 1000;
  // Over maxclients: what the client is told before the connection closes.
  static void refuse_full(std::string& out);
  bool tick() { return false; }
  void input_too_large();  // -ERR Protocol error: too big ..., then close
  void closing();          // lets go of the watched keys and the subscriptions
  // Pub/sub: `wake` is called (any thread) when messages arrive; take_pushes() (on the
  // connection's thread, with what the stream has not sent yet) appends them to output().
  void set_push_wake(std::function<void()> wake);
  Pushes take_pushes(size_t unsent);
  // A subscribed client is held to client-output-buffer-limit's pubsub class (Redis's rule).
  const OutputLimit& output_limit() const;
  bool subscribed() const { return subs_.active(); }
  // Blocked on keys (BLPOP and its kin): no reply yet, nothing after it read.
  // Or holding replies until a waiting take is due (FG.TAKE ... WAIT): the same.
  bool blocked() const { return blocked_ || !held_.empty(); }
  bool wants_turn() const;
  // Its user's rules changed (or not): false when its user was removed or disabled, or, as
  // redis-server does, when it listens to a channel or pattern its user may no longer use.
  bool rights_hold();

  std::string& output() { return out_; }
  // What the session holds besides its output: the commands queued in a MULTI, the
  // subscriptions and the messages waiting (counted against maxmemory-clients with the
  // connection's buffers).
  int64_t held_bytes() const;
  // The last batch's replies outgrew the room maxmemory-clients left them: the connection
  // must close (nothing of the batch was written).
  bool evicted() const { return evicted_; }

  void request(Request& r, ReplyStyle style) override;
  void block(Request& r, int64_t timeout_ms) override;
  void multi() override;
  void exec() override;
  void discard() override;
  void watch(std::vector<std::string_view>& keys) override;
  void unwatch() override;
  void reset() override;
  bool can_wait() const override { return !running_exec_; }
  void take_all(std::vector<TakeAllItem> items, int64_t cost) override;

 private:
  void show_state();  // CLIENT LIST's sub=, psub=, ssub=, multi=
  // One command's place among this read's replies.
  //  kWatch: WATCH's request; once back, its tokens are kept and the reply is +OK.
  //  kCheck: a watched key's check at EXEC (no reply of its own); kExec: EXEC's reply, an
  //  array of the `aux` replies after it, or a null array if a check before it failed.
  //  kHidden: a request whose answer nobody reads (letting go of watches).
  struct Slot {
    enum class Type : uint8_t {
      kLocal,
      kPending,
      kWatch,
      kCheck,
      kExec,
      kHidden,
      kBlock,
      kTakeAll,  // FG.TAKEALL: its rounds run apart (take_alls_[aux])
      kLate      // aux commands alike refused past their deadline: the one reply, aux times
    } type;
    ReplyStyle style;
    uint16_t cmd;    // the command's id for metrics
    bool counted;    // kLocal: counted by the core already
    uint32_t start;  // kLocal: where its reply starts in local_
    uint32_t len;
    Pending pending;      // kPending, kWatch, kCheck, kHidden
    uint32_t aux = 0;     // kWatch: its keys in watching_; kExec: how many replies it holds
    bool silent = false;  // CLIENT REPLY OFF or SKIP: the reply is not sent
  };
  void end_local_slot(size_t start);
  // In a transaction: queues the command (+QUEUED), or answers why not and marks the
  // transaction to be refused at EXEC. False: the command runs now (EXEC, DISCARD, ...).
  bool queue(const CommandSpec* spec);
  // Answers why the command cannot run (unknown, wrong arity, needs AUTH), if it cannot.
  bool refused(const CommandSpec* spec);
  // The deadline in force for limiter commands (FG.DEADLINE, else request-deadline; 0: none),
  // and how long this read's input waited when that is past it (0: not late).
  int64_t deadline_ms() const;
  int64_t waited_past_deadline() const;
  // Late input: answers the run of like limiter commands at its start, each with the same
  // refusal and none parsed into words or run (what is late must cost little, or an
  // overloaded node falls further behind answering it); the bytes taken, 0 if none.
  size_t refuse_late(const char* data, size_t len);
  // Whether the queued commands' keys and the watched keys lie in more than one slot
  // (cluster mode).
  bool queued_cross_slot() const;
  // A request whose slot becomes `type` (kCheck, kHidden); answered at once, it leaves no
  // reply (a check answered so has failed).
  void request_as(Request& r, Slot::Type type);
  // A request of WATCH's own (WATCH, EXEC's check, a release) on `words`, kept until the
  // flight is back.
  Request watch_op(DataCmd c, std::vector<std::string> words);
  // Lets go of every watched key (UNWATCH, DISCARD, an EXEC that does not run).
  void release_watches();
  // The keys this connection still watches, forgotten here (closing()).
  std::vector<std::string> take_watched();
  const Door& door();  // for this read (the mode follows CLUSTER SLOTS at once)

  RequestCore core_;
  Door door_;
  Outcome now_;  // submit() writes it only when it answers at once
  RespParser parser_;
  std::vector<std::string_view> args_;
  Flight* flight_ = nullptr;
  std::vector<Slot> slots_;
  size_t pending_ = 0;      // kPending slots of this read
  bool requested_ = false;  // the running command went to the core
  uint64_t routing_version_ = 0;
  uint16_t cur_cmd_ = 0;
  std::string last_name_;  // the last command looked up, as sent, and its table entry
  const CommandSpec* last_spec_ = nullptr;
  int64_t arrived_ns_ = 0;  // when this read's commands were parsed (steady clock)
  // This read's commands as they came (the input buffer keeps them until complete()): read
  // again only when the batch was slow (the slow log).
  std::string_view batch_in_;
  int64_t late_ms_ = 0;  // this read's input waited that long, past the deadline
  // Scripts: how many one batch may carry, so that a batch's scripts take about one script
  // budget (a pipeline of slow scripts cannot hold a shard for seconds), learnt from what
  // this connection's last batch of scripts took; and how many this batch carries.
  size_t script_allowance_ = 1;
  static constexpr int64_t kMinReplyRoom = 1 << 20;
  size_t scripts_ = 0;
  bool skip_this_ = false;  // CLIENT REPLY SKIP came before this command
  std::string out_;
  // MULTI: the queued commands' words (copied: the read buffer they came in goes), and
  // whether one was refused while queueing (EXEC then answers EXECABORT).
  bool in_multi_ = false;
  bool multi_dirty_ = false;
  std::vector<std::vector<std::string>> queued_;
  int64_t queued_bytes_ = 0;
  // Data replies' room in this batch (Door::reply_room), and whether it ran out.
  std::atomic<int64_t> reply_room_{0};
  bool evicted_ = false;
  // EXEC's commands, kept until the flight that runs them is back.
  std::vector<std::vector<std::string>> executing_;
  std::vector<std::string_view> exec_args_;
  // WATCH: each watched key and the version its shard gave it. Keys whose WATCH is on its
  // way (watching_, by kWatch slot) are added when it is back; until then EXEC, DISCARD and
  // UNWATCH wait for it.
  struct Watched {
    std::string key;
    int64_t token;
  };
  std::vector<Watched> watched_;
  int64_t watched_bytes_ = 0;  // what its watched keys make the node hold (maxmemory-clients)
  static constexpr int64_t kWatchedBytes = 64;  // a watched key's entry, besides its name
  std::deque<std::vector<std::string>> watching_;
  std::deque<std::vector<std::string>> watch_words_;  // requests' words until the flight is back
  bool watch_pending_ = false;
  uint32_t txn_ = 0;           // EXEC: the transaction its requests join
  bool running_exec_ = false;  // EXEC's commands are running (a blocking one does not wait)

  // A blocking command (kBlock slot): its words (kept for the attempts after the first),
  // when it gives up (steady clock; 0: never), its registration with the node's KeyWaiters,
  // and whether a key of it got elements since the last attempt.
  struct Block {
    DataCmd data = DataCmd::kNone;
    uint16_t cmd = 0;
    std::vector<std::string> words;
    std::vector<std::string_view> args;
    int64_t deadline_ns = 0;
    uint64_t ticket = 0;
  };
  Block block_;
  void take_stream_ids(const DataReply& reply);
  bool blocked_ = false;        // its last attempt found nothing: waiting
  bool block_started_ = false;  // this read's blocking command was sent: read no further
  int64_t next_try_ns_ = 0;     // when to try again without a wake (a key on another node)
  std::shared_ptr<std::atomic<bool>> woken_ = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> push_wake_;
  static constexpr int64_t kBlockPollNs = 1'000'000'000;
  void end_block();  // served, timed out, or the connection is going: stop waiting
  void log_slow(int64_t us);

  // FG.TAKE ... WAIT: the takes of this read that may wait (Slot::aux - 1 indexes them);
  // once one is answered with a wait, its reply and every reply after it are held (in
  // order) until the latest of them is due; nothing more is read meanwhile. Each holds a
  // place in the node's WaitRoom; a connection that closes gives their costs back.
  // FG.TAKEALL: its reply, if its rounds are not done when its turn comes, is held the same
  // way until they are (they wake the connection).
  struct TakeAllWait {
    std::atomic<bool> ready{false};
    TakeAllResult result;  // (written before ready is set)
  };
  struct HeldPart {
    std::string bytes;                 // replies, or
    std::shared_ptr<TakeAllWait> all;  // an FG.TAKEALL's, once it is ready
  };
  std::vector<Waiter> wait_takes_;
  std::vector<std::shared_ptr<TakeAllWait>> take_alls_;  // this read's
  static constexpr size_t kTakeAllsPerBatch = 16;
  std::vector<Waiter> held_waiters_;
  std::vector<HeldPart> held_;
  int64_t held_due_ns_ = 0;  // steady clock: when the last waiting take is due
  bool held_ready() const;
  void release_held();
  void submit_block(Request& r);
};

// Appends `o` (the outcome of a request of `style`) as a RESP reply.
void write_outcome(RespWriter& w, const Outcome& o, ReplyStyle style);
// FG.TAKEALL's reply: allowed, then each limit's five fields (or the error).
void write_take_all(RespWriter& w, const TakeAllResult& r);
// A data command's reply, in the connection's protocol.
void write_reply(RespWriter& w, const DataReply& r);

}  // namespace fg
