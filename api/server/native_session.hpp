// The native door: one native-protocol connection's state, with no sockets (the node's
// NativeConnection moves the bytes). Length-prefixed ClientFrames in, each request decoded
// into a Request for the request core, one ServerFrame per ClientFrame out with results in
// request order. A key another node owns is answered MOVED (the client knows the topology)
// unless the request asks to be forwarded.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client_registry.hpp"
#include "door_session.hpp"
#include "lease_upkeep.hpp"
#include "request_core.hpp"

namespace floodgate::native {
class Topology;
}  // namespace floodgate::native

namespace fg::wire {
struct RequestView;
struct ResultView;
}  // namespace fg::wire

namespace fg {

class NativeSession {
 public:
  static constexpr const char* kDoor = "native";  // (CLIENT LIST's door=)
  NativeSession(Services& svc, std::shared_ptr<ClientInfo> client);
  ~NativeSession();

  // Takes whole frames from `data`. When no request joined `flight` the answers are already
  // in output(); else call complete() once the flight is back.
  ProcessResult process(const char* data, size_t len, Flight& flight);
  void complete(Flight& flight);

  // The client asked for topology pushes and the node adopted a new table since the
  // last one it was sent: appends a push frame to output(). Returns whether it did.
  bool push_topology_if_changed();
  bool watches_topology() const { return watch_topology_; }

  std::string& output() { return out_; }

  // The connection shell's terms (door_session.hpp): frames are copied as they are taken,
  // so the shell reads on while a batch is in flight; a frame is at most kMaxFrameBytes;
  // ten ticks a second carry the topology pushes.
  static constexpr bool kViewsInput = false;
  static constexpr size_t kInitialInput = 64 * 1024;
  static size_t max_input(size_t max_query_bytes);
  static constexpr char kClientWord[] = "native client";  // in the log: "<word> <addr> dropped"
  static constexpr int64_t kTickMs = 100;
  // Over maxclients: nothing is said (the client library reports the refused connection).
  static void refuse_full(std::string&) {}
  bool tick() { return push_topology_if_changed(); }
  // Cannot happen (process() refuses a frame longer than the cap, closing): close.
  void input_too_large() {}
  void closing();  // gives back the places of waiting takes never answered
  // The frames of the batch in flight, copied from the input.
  int64_t held_bytes() const;
  // Native answers are not capped per batch (a frame's answers are bounded by the frame).
  bool evicted() const { return false; }
  // No pub/sub on this door: nothing arrives unasked but the topology (tick()).
  void set_push_wake(std::function<void()>) {}
  Pushes take_pushes(size_t) { return Pushes::kNone; }
  bool subscribed() const { return false; }
  // Holding frames until a waiting take is due (TAKE with wait_ms): nothing more is read.
  bool blocked() const { return held_due_ns_ != 0; }
  bool wants_turn() const;
  // False when its user was removed or disabled (closed, as Redis does).
  bool rights_hold() { return acl_.refresh(); }
  const OutputLimit& output_limit() const { return svc_.settings.output_limits.normal; }

 private:
  struct Frame;
  // TAKE with wait_ms: from the first frame holding a take admitted later, the frames'
  // results wait (in order) until the latest is due; each waiter has a place in the node's
  // WaitRoom (api/core/wait_room.hpp).
  std::string held_;
  std::vector<Waiter> held_waiters_;
  int64_t held_due_ns_ = 0;      // steady clock; 0: nothing held
  size_t held_from_ = SIZE_MAX;  // while finishing: where in out_ the held frames start
  void hold();
  void release_held();
  bool must_wait(const Frame& f) const;
  void serve(Frame& f, Flight& flight);
  void request(const wire::RequestView& req, Frame& f, size_t index, Flight& flight);
  void fill_topology(floodgate::native::Topology& t) const;
  void finish(Frame& f, Flight* flight);
  // The doors for requests without and with `forward`, texts kept in `f`'s arena.
  Door& door(bool forward, Frame& f);

  Services& svc_;
  std::shared_ptr<ClientInfo> client_;
  RequestCore core_;
  Door move_door_, forward_door_;
  std::vector<std::unique_ptr<Frame>> frames_;  // of the current process() call
  size_t used_frames_ = 0;
  std::shared_ptr<const PolicySet> policies_;
  uint64_t policies_version_ = 0;
  std::shared_ptr<const Routing> routing_;
  uint64_t routing_version_ = 0;
  uint64_t pushed_epoch_ = 0;
  // The last inline limit a request gave, as made and checked (clients send the same one
  // again and again).
  struct InlineLimit {
    int kind = -1;
    int64_t a = 0, b = 0, period_ms = 0;
    std::string time_zone;
    LimitSpec spec;
  } last_limit_;
  bool watch_topology_ = false;
  bool omit_retry_ = false;  // Hello.allowed_omits_retry: allowed results leave out the -1
  // Whether the connection's user may not run `req` (ACL); if so, `res` says why.
  bool refused_by_acl(const wire::RequestView& req, Frame& f, wire::ResultView& res);
  AclSession acl_;
  std::vector<std::string_view> acl_words_;  // an op as the words its ACL check reads
  std::string out_;
};

// Writes `o`, the outcome of a request of `verb`, as a native Result (strings are views
// into `o`).
void fill_result(const Outcome& o, Verb verb, wire::ResultView& res);

}  // namespace fg
