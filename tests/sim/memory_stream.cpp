#include "memory_stream.hpp"

#include <algorithm>
#include <cstring>

namespace fg::sim {

// Both ends share it; everything runs on the simulator's one thread, and each completion
// is posted to the node's event loop, as a socket's would be.
struct MemoryClient::Pipe {
  asio::any_io_executor ex;
  size_t window = 0;
  std::string to_node;    // sent, not yet read by the node
  std::string to_client;  // written by the node, not yet taken
  bool node_closed = false, client_closed = false;
  // The node's read in wait, and its write's rest in wait.
  char* read_into = nullptr;
  size_t read_room = 0;
  std::shared_ptr<ClientStream::Owner> reader;
  std::string unsent;
  std::shared_ptr<ClientStream::Owner> writer;

  void finish_read() {
    if (!reader) return;
    if (to_node.empty() && !client_closed && !node_closed) return;
    auto owner = std::move(reader);
    if (to_node.empty()) {
      asio::post(ex, [owner] { owner->on_read(asio::error::eof, 0); });
      return;
    }
    const size_t n = std::min(read_room, to_node.size());
    std::memcpy(read_into, to_node.data(), n);
    to_node.erase(0, n);
    asio::post(ex, [owner, n] { owner->on_read({}, n); });
  }
  // Moves output into the window as far as it takes; true if nothing is left over.
  bool fill(std::string& out) {
    const size_t room = window > to_client.size() ? window - to_client.size() : 0;
    const size_t n = std::min(room, out.size());
    to_client.append(out, 0, n);
    out.erase(0, n);
    return out.empty();
  }
  void finish_write() {
    if (!writer) return;
    if (client_closed || node_closed) {
      auto owner = std::move(writer);
      unsent.clear();
      asio::post(ex, [owner] { owner->on_written(asio::error::broken_pipe); });
      return;
    }
    if (!fill(unsent)) return;
    auto owner = std::move(writer);
    asio::post(ex, [owner] { owner->on_written({}); });
  }
};

namespace {

class NodeEnd final : public ClientStream {
 public:
  explicit NodeEnd(std::shared_ptr<MemoryClient::Pipe> p) : p_(std::move(p)) {}
  ~NodeEnd() override { shut(); }
  asio::any_io_executor executor() override { return p_->ex; }
  std::string peer() override { return "127.0.0.1:40000"; }
  std::string local() override { return "127.0.0.1:6379"; }
  void secure(std::shared_ptr<Owner>, int64_t, TlsCounters*,
              std::function<void(bool)> done) override {
    done(true);
  }
  void read_some(char* into, size_t n, std::shared_ptr<Owner> owner) override {
    p_->read_into = into;
    p_->read_room = n;
    p_->reader = std::move(owner);
    p_->finish_read();
  }
  bool write(std::string& out, asio::error_code& ec, std::shared_ptr<Owner> owner) override {
    if (p_->client_closed || p_->node_closed) {
      ec = asio::error::broken_pipe;
      out.clear();
      return true;
    }
    if (p_->fill(out)) return true;
    p_->unsent.swap(out);
    out.clear();
    p_->writer = std::move(owner);
    return false;
  }
  size_t unsent_bytes() const override { return p_->unsent.size(); }
  size_t held_bytes() const override { return p_->unsent.capacity(); }
  void shut() override {
    if (p_->node_closed) return;
    p_->node_closed = true;
    p_->finish_read();
    p_->finish_write();
  }

 private:
  std::shared_ptr<MemoryClient::Pipe> p_;
};

}  // namespace

MemoryClient::MemoryClient(size_t window) : pipe_(std::make_shared<Pipe>()) {
  pipe_->window = window;
}

// (Nothing is posted: the node may be gone. Dropping what waits ends the pipe's hold on the
// connection; a test closes its clients and runs the world before it ends them.)
MemoryClient::~MemoryClient() {
  pipe_->client_closed = true;
  pipe_->reader.reset();
  pipe_->writer.reset();
}

std::unique_ptr<ClientStream> MemoryClient::node_end(asio::any_io_executor ex) {
  pipe_->ex = std::move(ex);
  return std::make_unique<NodeEnd>(pipe_);
}

void MemoryClient::send(const std::string& bytes) {
  if (pipe_->client_closed) return;
  pipe_->to_node += bytes;
  pipe_->finish_read();
}

std::string MemoryClient::take() {
  if (!reading_) return {};
  std::string out;
  out.swap(pipe_->to_client);
  pipe_->finish_write();
  return out;
}

void MemoryClient::set_reading(bool reading) { reading_ = reading; }

bool MemoryClient::closed_by_node() const { return pipe_->node_closed; }

void MemoryClient::node_gone() { node_gone(pipe_); }

void MemoryClient::node_gone(const std::shared_ptr<Pipe>& p) {
  p->node_closed = true;
  p->reader.reset();
  p->writer.reset();
  p->unsent.clear();
}

void MemoryClient::close() {
  if (pipe_->client_closed) return;
  pipe_->client_closed = true;
  pipe_->finish_read();
  pipe_->finish_write();
}

}  // namespace fg::sim
