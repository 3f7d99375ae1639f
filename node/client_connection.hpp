// One client connection of a byte-stream door — RESP (RespSession), native (NativeSession)
// or the gateway door's gRPC (GrpcSession) — over a ClientStream: one loop (read ->
// Session::process -> shards -> write -> read), one write path, one memory account
// (maxmemory-clients), one timer for the deadlines and the session's pushes, one retry for a
// request whose slot's state is still arriving. The session holds the protocol; its terms are in
// api/server/door_session.hpp.
//
// Only one batch is in flight per connection, and a new batch waits until the last one's
// replies are written: pipelined replies stay in order, and a client that does not read
// cannot make the node hold more than one batch of replies and its input cap. A connection
// that reads much at a time takes its batches in turn with the others that do, through the
// I/O thread's backlog queue, while one that says little is served at once (fair reading).
#pragma once
#include <memory>
#include <string>

#include "client_socket.hpp"
#include "client_stream.hpp"
#include "input_buffer.hpp"
#include "io_batcher.hpp"
#include "timer.hpp"

namespace fg {

template <class Session>
class ClientConnection final : public BatchWaiter,
                               public Backlogged,
                               public ClientStream::Owner,
                               public std::enable_shared_from_this<ClientConnection<Session>> {
 public:
  ClientConnection(std::unique_ptr<ClientStream> stream, Services& svc,
                   std::shared_ptr<const ConnectionLimits> limits, IoBatcher& batcher);
  ~ClientConnection() override;
  // Secures the stream (TLS), registers the client, then serves it.
  void start();
  // On this connection's thread, once its requests' flight is back.
  void batch_complete(Flight& flight) override;
  void on_read(asio::error_code ec, size_t n) override;
  void on_written(asio::error_code ec) override;
  // Its turn in the I/O thread's backlog queue (IoBatcher::queue_backlog).
  void take_turn() override;

 private:
  void serve();
  void pump();
  void read();
  // Writes the output: true if it all went at once (carry on), false if the rest is
  // written in the background (on_written follows) or the connection closed.
  bool write();
  void close();
  void arm_timer();
  void tick();
  // Why the client goes (client-output-buffer-limit), or null.
  const char* output_breach();
  // Messages (pub/sub) arrived: written now, or after the write under way, or after the
  // batch in flight's replies.
  void on_pushes();
  void on_wake();  // the registry asks: memory over the cap, or the users changed
  // Moves the messages that arrived into the output; false if none, or if they outgrew the
  // limit (the connection is closed).
  bool take_pushes();
  // Reports the buffers' size (maxmemory-clients); false, and closed, if evicted.
  bool account();
  // Whether CLIENT KILL chose it (closed, or to close once its batch is answered).
  bool was_killed(bool on_tick);
  bool busy() const { return in_flight_ || writing_ || stalled_; }
  std::shared_ptr<ClientConnection> self() { return this->shared_from_this(); }

  std::unique_ptr<ClientStream> stream_;
  SteadyTimer timer_;
  SteadyTimer stall_timer_;
  SteadyTimer block_timer_;  // a blocked client's next attempt, or its timeout
  Services& svc_;
  std::shared_ptr<const ConnectionLimits> limits_;
  IoBatcher& batcher_;
  std::shared_ptr<ClientInfo> client_;
  std::unique_ptr<Session> session_;
  InputBuffer in_;
  size_t pending_consumed_ = 0;  // kViewsInput: dropped from in_ when the flight is back
  bool reading_ = false;         // a read is outstanding
  bool in_flight_ = false;       // a batch is in the shards
  bool writing_ = false;         // the stream writes in the background: the client is slow
  bool stalled_ = false;         // waiting for a slot's state to arrive
  // Fair reading: a connection whose last read brought more than kQuickRead bytes is served
  // through the backlog queue (queued_ while it waits there, in_turn_ during its turn).
  static constexpr size_t kQuickRead = 4096;
  bool backlogged_ = false;
  bool queued_ = false;
  bool in_turn_ = false;
  bool closed_ = false;
  bool stamping_ = false;           // the stream was asked for the input's receive stamps
  bool pending_close_ = false;      // close once the flight's replies are written
  bool close_after_write_ = false;  // close once the output is written
  int64_t reported_bytes_ = 0;
  int64_t over_soft_since_ms_ = 0;  // since when its unsent replies are past the soft limit
  ConnectionClock clock_;
};

class RespSession;
class NativeSession;
class GrpcSession;
extern template class ClientConnection<RespSession>;
extern template class ClientConnection<NativeSession>;
extern template class ClientConnection<GrpcSession>;

}  // namespace fg
