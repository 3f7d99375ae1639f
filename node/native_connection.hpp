// One native-protocol client connection: moves frames between its socket and its
// NativeSession. Reads go on while a batch is in flight (the client pipelines frames);
// processing waits for the previous answers to be written, which bounds what a client
// that does not read can make the node hold.
#pragma once
#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "connection.hpp"
#include "io_batcher.hpp"
#include "native_session.hpp"

namespace fg {

class NativeConnection : public BatchWaiter, public std::enable_shared_from_this<NativeConnection> {
 public:
  // `tls`: the context of the TLS port it came to (null on a plain port).
  NativeConnection(asio::ip::tcp::socket sock, std::shared_ptr<asio::ssl::context> tls,
                   Services& svc, ConnectionLimits limits, IoBatcher& batcher);
  ~NativeConnection() override;
  void start();
  void serve();  // once the TLS handshake (if any) is done: serve_when_secured
  void batch_complete(Flight& flight) override;

 private:
  void pump();
  void maybe_read();
  // Writes the replies: true if they all went at once (carry on), false if the rest is
  // written in the background (pump() follows) or the connection closed.
  bool write();
  void close();
  void arm_timer();
  void tick();
  // Reports the buffers' size (maxmemory-clients); false, and closed, if evicted.
  bool account();
  int64_t now_ms() const;

  ByteStream stream_;
  SteadyTimer timer_;
  SteadyTimer stall_timer_;  // retries a frame whose slot's state is arriving
  Services& svc_;
  ConnectionLimits limits_;
  std::shared_ptr<ClientInfo> client_;
  std::unique_ptr<NativeSession> session_;
  IoBatcher& batcher_;
  InputBuffer in_;
  std::string wbuf_;
  bool reading_ = false, writing_ = false, in_flight_ = false, closed_ = false, stalled_ = false;
  bool close_after_write_ = false, pending_close_ = false;
  int64_t reported_bytes_ = 0;
  ConnectionClock clock_;
};

}  // namespace fg
