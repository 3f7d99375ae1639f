// One RESP client connection: moves bytes between its socket and its Session, with the
// per-connection defences (query size, half-command deadline, idle timeout, slow reader).
#pragma once
#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "client_socket.hpp"
#include "input_buffer.hpp"
#include "io_batcher.hpp"
#include "resp_session.hpp"
#include "timer.hpp"

namespace fg {

class Connection : public BatchWaiter, public std::enable_shared_from_this<Connection> {
 public:
  // `tls`: the context of the TLS port it came to (null on a plain port).
  Connection(asio::ip::tcp::socket sock, std::shared_ptr<asio::ssl::context> tls, Services& svc,
             ConnectionLimits limits, IoBatcher& batcher);
  ~Connection();
  void start();
  void serve();  // once the TLS handshake (if any) is done: serve_when_secured
  // On this connection's thread, once its requests' flight is back.
  void batch_complete(Flight& flight) override;

 private:
  enum class State { kReading, kInFlight, kWriting, kClosed };
  void read();
  void pump();
  void after_batch(size_t consumed, bool close);
  // Writes the replies: true if they all went at once (carry on), false if the rest is
  // written in the background (pump() follows) or the connection closed.
  bool write();
  void close();
  void arm_watchdog();
  void check_deadlines();
  const char* output_breach();
  // Reports the buffers' size (maxmemory-clients); false, and closed, if evicted.
  bool account();
  int64_t now_ms() const;

  ByteStream stream_;
  SteadyTimer watchdog_;
  SteadyTimer stall_timer_;  // retries a command whose slot's state is arriving
  Services& svc_;
  ConnectionLimits limits_;
  std::shared_ptr<ClientInfo> client_;
  std::unique_ptr<RespSession> session_;
  IoBatcher& batcher_;
  InputBuffer in_;
  size_t pending_consumed_ = 0;
  bool pending_close_ = false;
  bool close_after_write_ = false;
  std::string wbuf_;
  State state_ = State::kReading;
  int64_t reported_bytes_ = 0;
  int64_t over_soft_since_ms_ = 0;  // since when its unsent replies are past the soft limit
  ConnectionClock clock_;
};

}  // namespace fg
