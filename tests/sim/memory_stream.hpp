// A client connection in the simulator: an in-memory pipe between a test's client and a
// node's connection shell (node/client_connection.hpp), on the node's polled event loop
// and virtual time. The node's end is a ClientStream, so the node serves it exactly as it
// serves a socket: the same session, deadlines and memory account. The client's end says
// how much unread output it takes (its socket buffers), so a client that stops reading can
// be played.
#pragma once
#include <memory>
#include <string>

#include "client_stream.hpp"

namespace fg::sim {

class MemoryClient {
 public:
  // `window`: how many unread reply bytes the client's side holds before the node's writes
  // have to wait.
  explicit MemoryClient(size_t window = 256 * 1024);
  ~MemoryClient();
  MemoryClient(const MemoryClient&) = delete;
  MemoryClient& operator=(const MemoryClient&) = delete;

  // The node's end, for Node::adopt_client (made once, on the node's event loop).
  std::unique_ptr<ClientStream> node_end(asio::any_io_executor ex);
  void send(const std::string& bytes);
  // What the node has written since the last take(); taking makes room in the window.
  std::string take();
  // Reading stops (the window no longer drains) or starts again.
  void set_reading(bool reading);
  bool closed_by_node() const;
  void close();  // the client hangs up (the node sees it when the world runs next)

  struct Pipe;
  // The node's process ended (kill -9): the connection is gone with it, and the pipe lets
  // go of it now, while the node's objects still exist, as a socket's pending operations
  // go with the process's event loop.
  void node_gone();
  std::weak_ptr<Pipe> pipe() const { return pipe_; }
  static void node_gone(const std::shared_ptr<Pipe>& p);

 private:
  std::shared_ptr<Pipe> pipe_;
  bool reading_ = true;
};

}  // namespace fg::sim
