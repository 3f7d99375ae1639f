// Forwarding: the entry node's calls to slot owners, and the owner running them.
#include "forward.hpp"

#include <spdlog/spdlog.h>

#include "cluster.hpp"
#include "peer.pb.h"
#include "session.hpp"

namespace fg {

namespace {
// Parses the decimal after a type byte up to CRLF; returns the offset past CRLF or 0.
size_t read_line_int(const char* p, size_t n, int64_t& v) {
  size_t i = 1;
  bool neg = false;
  if (i < n && p[i] == '-') {
    neg = true;
    ++i;
  }
  v = 0;
  const size_t digits = i;
  while (i < n && p[i] >= '0' && p[i] <= '9' && i - digits < 18) v = v * 10 + (p[i++] - '0');
  if (i == digits || i + 1 >= n || p[i] != '\r' || p[i + 1] != '\n') return 0;
  if (neg) v = -v;
  return i + 2;
}
const char* status_text(PeerStatus st) {
  switch (st) {
    case PeerStatus::kTimeout:
      return "timeout";
    case PeerStatus::kUnavailable:
      return "unreachable";
    case PeerStatus::kUnknownKind:
      return "forwarding not supported";
    default:
      return "error";
  }
}
}  // namespace

size_t resp_value_length(const char* p, size_t n, int depth) {
  if (n < 3 || depth > 16) return 0;
  switch (p[0]) {
    case '+':
    case '-':
    case ':':
    case ',':
    case '#':
    case '_':
    case '(': {
      for (size_t i = 1; i + 1 < n; ++i)
        if (p[i] == '\r' && p[i + 1] == '\n') return i + 2;
      return 0;
    }
    case '$':
    case '!':
    case '=': {
      int64_t len;
      const size_t h = read_line_int(p, n, len);
      if (h == 0) return 0;
      if (len < 0) return h;
      const size_t total = h + static_cast<size_t>(len) + 2;
      return total <= n ? total : 0;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      int64_t count;
      size_t h = read_line_int(p, n, count);
      if (h == 0) return 0;
      if (count < 0) return h;
      if (p[0] == '%') count *= 2;
      for (int64_t k = 0; k < count; ++k) {
        const size_t m = resp_value_length(p + h, n - h, depth + 1);
        if (m == 0) return 0;
        h += m;
      }
      return h;
    }
    default:
      return 0;
  }
}

void send_forwards(Cluster& cluster, const BatchPtr& batch, ForwardList& calls,
                   int64_t timeout_ms) {
  for (ForwardCall& c : calls) {
    wire::ForwardRequest req;
    req.set_proto(static_cast<uint32_t>(c.proto));
    req.set_count(c.count);
    req.set_hops(c.hops);
    req.set_commands(std::move(c.cmds));
    c.cmds.clear();
    cluster.call(c.peer_addr, kPeerForward, req.SerializeAsString(),
                 std::chrono::milliseconds(timeout_ms),
                 [batch, call = &c](PeerStatus st, std::string body) {
                   wire::ForwardResponse resp;
                   if (st == PeerStatus::kOk && resp.ParseFromString(body)) {
                     call->ok = true;
                     call->replies = std::move(*resp.mutable_replies());
                   } else {
                     call->error = st == PeerStatus::kOk ? "malformed reply" : status_text(st);
                   }
                   batch->finish_one();
                 });
  }
}

namespace {
bool wants_ack(const ShardOp& op) {
  if (op.status != OpStatus::kOk) return false;
  switch (op.code) {
    case OpCode::kAcquire:
      return op.acquire.granted;
    case OpCode::kRelease:
      return op.value == 1;
    case OpCode::kReleaseHolder:
      return op.value > 0;
    case OpCode::kTake:
    case OpCode::kReserve:
    case OpCode::kReset:
    case OpCode::kRenew:
      return op.spec.sync;
    default:
      return false;
  }
}
}  // namespace

bool needs_replica_ack(const Batch& b) {
  for (const ShardOp& op : b.ops)
    if (wants_ack(op)) return true;
  return false;
}

void await_replicas(Cluster& cluster, const BatchPtr& b, std::function<void()> then) {
  cluster.after_replicated([b, then = std::move(then)](bool ok) {
    if (!ok) {
      for (ShardOp& op : b->ops)
        if (wants_ack(op)) op.status = OpStatus::kNotReplicated;
    }
    then();
  });
}

namespace {

// Commands run through a session of their own, batch by batch, then the replies go back
// in one response: a forwarded request on the owner (hops > 0), or work the node does on
// its own behalf (hops 0, cluster optional).
class CommandJob : public BatchSink, public std::enable_shared_from_this<CommandJob> {
 public:
  CommandJob(asio::io_context& io, Cluster* cluster, Services& svc, std::string cmds, int proto,
             uint32_t hops, PeerServer::Respond respond)
      : io_(io),
        cluster_(cluster),
        svc_(svc),
        cmds_(std::move(cmds)),
        respond_(std::move(respond)),
        timer_(io),
        batch_(std::make_shared<Batch>()) {
    auto client = std::make_shared<ClientInfo>();
    client->addr = hops > 0 ? "peer" : "node";
    session_ = std::make_unique<Session>(svc, client);
    if (hops > 0) session_->set_forwarded(hops);
    session_->set_authenticated(true);
    session_->set_proto(proto);
  }

  void run() {
    while (true) {
      if (pos_ >= cmds_.size()) return reply();
      ProcessResult r = session_->process(cmds_.data() + pos_, cmds_.size() - pos_, *batch_,
                                          cluster_ ? &forwards_ : nullptr);
      if (r.submitted) {
        consumed_ = r.consumed;
        batch_->sink = shared_from_this();
        svc_.shards->submit(batch_, static_cast<int>(forwards_.size()));
        if (!forwards_.empty()) {
          send_forwards(*cluster_, batch_, forwards_, svc_.settings.forward_timeout_ms);
        }
        return;
      }
      pos_ += r.consumed;
      if (r.close) return reply();  // a protocol error: its reply is in the output
      if (r.stalled) {
        timer_.expires_after(std::chrono::milliseconds(2));
        timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
          if (!ec) self->run();
        });
        return;
      }
      if (r.consumed == 0) {
        return respond_(PeerStatus::kError, {}, "incomplete forwarded command");
      }
    }
  }

  void batch_done() override {
    if (cluster_ && needs_replica_ack(*batch_)) {
      return await_replicas(*cluster_, batch_, [self = shared_from_this()] { self->finish(); });
    }
    finish();
  }

  void finish() {
    asio::post(io_, [self = shared_from_this()] {
      self->batch_->sink.reset();
      self->session_->complete(*self->batch_, &self->forwards_);
      self->batch_->ops.clear();
      self->forwards_.clear();
      self->pos_ += self->consumed_;
      self->run();
    });
  }

 private:
  void reply() {
    wire::ForwardResponse resp;
    resp.set_replies(std::move(session_->output()));
    respond_(PeerStatus::kOk, resp.SerializeAsString(), {});
  }

  asio::io_context& io_;
  Cluster* cluster_;
  Services& svc_;
  std::string cmds_;
  PeerServer::Respond respond_;
  asio::steady_timer timer_;
  BatchPtr batch_;
  ForwardList forwards_;  // commands whose slot moved on meanwhile: one more hop
  std::unique_ptr<Session> session_;
  size_t pos_ = 0;
  size_t consumed_ = 0;
};

}  // namespace

void serve_forwards(Cluster& cluster, Services& svc) {
  cluster.on_request(
      kPeerForward, [&cluster, &svc](uint32_t, std::string body, PeerServer::Respond respond) {
        wire::ForwardRequest req;
        if (!req.ParseFromString(body) || (req.proto() != 2 && req.proto() != 3)) {
          return respond(PeerStatus::kError, {}, "malformed forward");
        }
        svc.counters.forwards_served.fetch_add(req.count(), std::memory_order_relaxed);
        auto job = std::make_shared<CommandJob>(
            cluster.io(), &cluster, svc, std::move(*req.mutable_commands()),
            static_cast<int>(req.proto()), std::max<uint32_t>(1, req.hops()), std::move(respond));
        job->run();
      });
}

void run_commands(asio::io_context& io, Cluster* cluster, Services& svc, std::string cmds) {
  asio::post(io, [&io, cluster, &svc, cmds = std::move(cmds)]() mutable {
    auto job = std::make_shared<CommandJob>(io, cluster, svc, std::move(cmds), 2, 0,
                                            [](PeerStatus, std::string, std::string) {});
    job->run();
  });
}

void release_bound_leases(Services& svc, uint64_t client_id) {
  if (!svc.bound) return;
  std::string cmds;
  for (const auto& holder : svc.bound->unbind(client_id)) {
    RespWriter w(cmds, 2);
    w.array(2);
    w.bulk("FG.RELEASEALL");
    w.bulk(holder);
  }
  if (!cmds.empty() && svc.run_background) svc.run_background(std::move(cmds));
}

}  // namespace fg
