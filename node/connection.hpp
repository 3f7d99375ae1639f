// One RESP client connection: moves bytes between its socket and its Session, with the
// per-connection defences (query size, half-command deadline, idle timeout, slow reader).
#pragma once
#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "io_batcher.hpp"
#include "resp_session.hpp"

namespace fg {

struct ConnectionLimits {
  size_t max_query_bytes = 8 << 20;
  int64_t query_deadline_ms = 30000;
  int64_t output_timeout_ms = 30000;
  int64_t timeout_s = 0;
};

// Where a connection stands, for the defences every client connection (RESP or native)
// gets: a client not reading its replies, a half-sent request, a silent idler.
struct ConnectionClock {
  bool writing = false;  // replies are being written
  int64_t write_since_ms = 0;
  bool waiting_for_input = false;  // nothing written or in flight: the client's turn
  int64_t partial_since_ms = 0;    // 0: no half-received request buffered
  bool input_empty = true;
  int64_t last_read_ms = 0;
};
// Null if the client may stay; otherwise why it is dropped ("" for a plain idle timeout,
// which is not logged). Counts the drop.
const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c,
                            int64_t now_ms, NodeCounters& counters);

class Connection : public BatchWaiter, public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::ip::tcp::socket sock, Services& svc, ConnectionLimits limits,
             IoBatcher& batcher);
  ~Connection();
  void start();
  // On this connection's thread, once its requests' flight is back.
  void batch_complete(Flight& flight) override;

 private:
  enum class State { kReading, kInFlight, kWriting, kClosed };
  void read();
  void pump();
  void after_batch(size_t consumed, bool close);
  void write();
  void close();
  void arm_watchdog();
  void check_deadlines();
  int64_t now_ms() const;

  asio::ip::tcp::socket sock_;
  asio::steady_timer watchdog_;
  asio::steady_timer stall_timer_;  // retries a command whose slot's state is arriving
  Services& svc_;
  ConnectionLimits limits_;
  std::shared_ptr<ClientInfo> client_;
  std::unique_ptr<RespSession> session_;
  IoBatcher& batcher_;
  std::vector<char> in_;
  size_t begin_ = 0, end_ = 0;
  size_t pending_consumed_ = 0;
  bool pending_close_ = false;
  bool close_after_write_ = false;
  std::string wbuf_;
  State state_ = State::kReading;
  int64_t last_read_ms_ = 0;
  int64_t partial_since_ms_ = 0;  // 0: no half-received command buffered
  int64_t write_since_ms_ = 0;
};

}  // namespace fg
