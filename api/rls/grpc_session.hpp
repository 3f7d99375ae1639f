// The gateway door's connection: gRPC over HTTP/2, on the node's connection shell (the
// shell's terms: api/server/door_session.hpp). HTTP/2 is Debian's nghttp2 — security-
// maintained, with the rapid-reset and CONTINUATION-flood mitigations — and gRPC's framing
// on it is ours: length-prefixed messages, `grpc-status` trailers. What each method means
// is grpc_calls.cpp's (ShouldRateLimit, Health/Check) and rlqs_streams.cpp's
// (StreamRateLimitQuotas); the door's shared state is gateway_door.hpp's.
//
// A connection holds at most: the streams its SETTINGS allow (counted from each stream's
// first HEADERS), 16 KB of headers a stream, one message of 1 MiB a stream while it
// arrives, 16 quota-service streams, and what nghttp2 allocates for it — all counted in
// held_bytes() (maxmemory-clients) — and 32 MB in all, past which the stream that grows is
// ended. Its calls run as request jobs on the connection's own I/O thread; answers are
// written as they come back (HTTP/2 streams do not wait for each other).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "client_registry.hpp"
#include "door_session.hpp"
#include "flight.hpp"
#include "output_limits.hpp"

namespace fg {

struct Services;

class GrpcSession {
 public:
  static constexpr const char* kDoor = "rls";  // (CLIENT LIST's door=)
  GrpcSession(Services& svc, std::shared_ptr<ClientInfo> client);
  ~GrpcSession();
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  // Takes every byte (HTTP/2 frames are nghttp2's to buffer); answers what it can at once
  // and starts request jobs for the rest. Never joins the shell's flight.
  ProcessResult process(const char* data, size_t len, Flight& flight);
  void complete(Flight&) {}
  std::string& output() { return out_; }

  // The shell's terms (door_session.hpp).
  static constexpr bool kViewsInput = false;
  static constexpr size_t kInitialInput = 16 * 1024;
  static size_t max_input(size_t) { return 256 * 1024; }
  static constexpr char kClientWord[] = "gateway";
  static constexpr int64_t kTickMs = 250;
  static void refuse_full(std::string&) {}  // (closed: a gateway connects again)
  bool tick();                              // (a turn when something is due)
  void input_too_large() {}
  void closing();
  int64_t held_bytes() const;
  bool evicted() const { return false; }
  // Answers that came back from request jobs wake the shell, which takes them here.
  void set_push_wake(std::function<void()> wake);
  Pushes take_pushes(size_t unsent);
  // Its own idle rule (rls-idle-timeout) and deadlines: never the shell's idle timeout, and
  // a turn with no input when its next deadline or quota slice is due (process()).
  bool subscribed() const { return true; }
  bool blocked() const { return true; }
  bool wants_turn() const;
  bool rights_hold() { return true; }  // (the rls-user's rights are checked per call)
  const OutputLimit& output_limit() const;

  struct Conn;  // (grpc_conn.hpp)

 private:
  std::shared_ptr<Conn> c_;
  std::string out_;
  bool admitted_ = false;  // (under rls-maxclients: counted until it goes)
};

}  // namespace fg
