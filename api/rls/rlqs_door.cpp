// The quota service's streams over gRPC's core API. A stream is a handful of batches, each
// with its own tag: the stream's arrival, its initial metadata, each message read (one
// awaited at a time), each message written (one at a time: answers made meanwhile wait in
// `pending` and go together), its status, and its close (the last). The stream's object is
// freed once it is closed and none of those is outstanding and no request job of its runs.
#include "rlqs_door.hpp"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "request_job.hpp"
#include "services.hpp"

namespace fg {

struct RlqsTag : DoorTag {
  enum class Step : uint8_t { kArrived, kHello, kRead, kWritten, kStatus, kClosed };
  RlqsCall* call;
  Step step;
  RlqsTag(RlqsCall* c, Step s) : DoorTag(What::kRlqs), call(c), step(s) {}
};

struct RlqsCall {
  using Step = RlqsTag::Step;
  grpc_call* call = nullptr;
  gpr_timespec deadline{};
  grpc_metadata_array metadata{};
  RlqsTag arrived{this, Step::kArrived}, hello{this, Step::kHello}, read{this, Step::kRead},
      written{this, Step::kWritten}, status{this, Step::kStatus}, closed{this, Step::kClosed};
  grpc_byte_buffer* in = nullptr;
  grpc_byte_buffer* out = nullptr;
  grpc_slice details = grpc_empty_slice();
  int cancelled = 0;
  int batches = 0;       // outstanding
  int64_t next_due = 0;  // its holders' earliest (INT64_MAX: none, or its job is out)
  bool hello_sent = false, gone = false, writing = false, ending = false, job = false;
  RlqsStream stream;
  RlqsWork work;
  rlqs_pb::RateLimitQuotaResponse pending;  // actions not yet written
  std::shared_ptr<RlqsCall> self;           // held until it is freed

  RlqsCall() { grpc_metadata_array_init(&metadata); }
  ~RlqsCall() {
    if (call) grpc_call_unref(call);
    if (in) grpc_byte_buffer_destroy(in);
    if (out) grpc_byte_buffer_destroy(out);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&metadata);
  }

  bool batch(grpc_op* ops, size_t n, RlqsTag& tag) {
    if (grpc_call_start_batch(call, ops, n, &tag, nullptr) != GRPC_CALL_OK) {
      spdlog::error("quota service: gRPC refused a stream's batch");
      grpc_call_cancel(call, nullptr);
      return false;
    }
    ++batches;
    return true;
  }
  void await_message() {
    grpc_op op{};
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &in;
    batch(&op, 1, read);
  }
};

namespace {

constexpr int64_t kLookNs = 100'000'000;

// A message's bytes in one piece.
std::string bytes_of(grpc_byte_buffer* bb) {
  grpc_byte_buffer_reader r;
  if (!grpc_byte_buffer_reader_init(&r, bb)) return {};
  grpc_slice all = grpc_byte_buffer_reader_readall(&r);
  grpc_byte_buffer_reader_destroy(&r);
  std::string s(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(all)), GRPC_SLICE_LENGTH(all));
  grpc_slice_unref(all);
  return s;
}

}  // namespace

RlqsServer::RlqsServer(Services& svc, RlsRules& rules, RlqsOptions options, Token token)
    : svc_(svc), rules_(rules), token_(std::move(token)), quota_(svc, rules, std::move(options)) {}

RlqsServer::~RlqsServer() = default;

void RlqsServer::arm(grpc_server* server, void* method, grpc_completion_queue* cq) {
  server_ = server;
  method_ = method;
  cq_ = cq;
  auto c = std::make_shared<RlqsCall>();
  c->self = c;
  if (grpc_server_request_registered_call(server, method, &c->call, &c->deadline, &c->metadata,
                                          nullptr, cq, cq, &c->arrived) != GRPC_CALL_OK) {
    c->self.reset();
  }
}

void RlqsServer::event(DoorTag* tag, bool ok, bool stopping, Lane& lane) {
  auto* t = static_cast<RlqsTag*>(tag);
  RlqsCall& c = *t->call;
  using Step = RlqsTag::Step;
  if (t->step == Step::kArrived) {
    if (!ok) {
      c.self.reset();  // (the server is shutting down)
      return;
    }
    if (!stopping) arm(server_, method_, cq_);
    return start(c);
  }
  --c.batches;
  switch (t->step) {
    case Step::kArrived:
    case Step::kHello:
    case Step::kStatus:
      break;
    case Step::kWritten:
      c.writing = false;
      if (c.out) grpc_byte_buffer_destroy(c.out);
      c.out = nullptr;
      if (ok) send(c);
      break;
    case Step::kRead:
      if (!ok || !c.in) {
        // The gateway is done sending (or the stream broke): it is ended here too.
        if (!c.gone) end(c, GRPC_STATUS_OK, "");
        break;
      }
      if (!c.gone && !c.ending) {
        const std::string bytes = bytes_of(c.in);
        grpc_byte_buffer_destroy(c.in);
        c.in = nullptr;
        const RlsStatus st = quota_.report(c.stream, bytes, svc_.clock->now_ns(), c.pending);
        if (!st.ok()) {
          end(c, static_cast<int>(st.code), st.message);
          break;
        }
        c.await_message();
        run(c, lane);
      }
      break;
    case Step::kClosed:
      c.gone = true;
      quota_.forget(c.stream);
      rules_.stats().rlqs_streams.fetch_sub(1, std::memory_order_relaxed);
      live_.erase(std::remove_if(live_.begin(), live_.end(),
                                 [&](const std::shared_ptr<RlqsCall>& p) { return p.get() == &c; }),
                  live_.end());
      break;
  }
  maybe_free(c);
}

void RlqsServer::start(RlqsCall& c) {
  rules_.stats().rlqs_streams.fetch_add(1, std::memory_order_relaxed);
  live_.push_back(c.self);
  grpc_op close{};
  close.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  close.data.recv_close_on_server.cancelled = &c.cancelled;
  c.batch(&close, 1, c.closed);
  if (const auto token = token_(); token && !door_bearer(c.metadata, *token)) {
    rules_.stats().unauthenticated.fetch_add(1, std::memory_order_relaxed);
    return end(c, GRPC_STATUS_UNAUTHENTICATED,
               "this gateway door wants authorization: Bearer <its rls-token-file's token>");
  }
  grpc_op hello{};
  hello.op = GRPC_OP_SEND_INITIAL_METADATA;
  c.hello_sent = true;
  c.batch(&hello, 1, c.hello);
  c.await_message();
}

// The stream's due grants and charges, as one request job; its answers written when back.
void RlqsServer::run(RlqsCall& c, Lane& lane) {
  if (c.gone || c.ending) return;
  if (!c.job) {
    const int64_t now = svc_.clock->now_ns();
    quota_.due(c.stream, now, c.work, c.pending);
    if (!c.work.empty()) {
      c.job = true;
      c.next_due = std::numeric_limits<int64_t>::max();
      Door door;
      door.mode = RouteMode::kForward;
      std::shared_ptr<RlqsCall> keep = c.self;
      RequestJob::start_here(
          svc_, lane, c.work.requests, door, keep, [this, keep](std::vector<Outcome>& outcomes) {
            RlqsCall& c = *keep;
            c.job = false;
            if (!c.gone) {
              quota_.settle(c.stream, c.work, outcomes.data(), svc_.clock->now_ns(), c.pending);
              noted(c);
              send(c);
            }
            maybe_free(c);
          });
    } else {
      noted(c);
    }
  }
  send(c);
}

// The stream's earliest due slice, and the queue's next look, after its holders changed.
void RlqsServer::noted(RlqsCall& c) {
  c.next_due = RlqsQuota::next_due(c.stream);
  next_scan_ns_ = std::min(next_scan_ns_, c.next_due);
}

void RlqsServer::send(RlqsCall& c) {
  if (c.writing || c.gone || c.ending || c.pending.bucket_action_size() == 0) return;
  const size_t n = c.pending.ByteSizeLong();
  grpc_slice s = grpc_slice_malloc(n);
  c.pending.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(s));
  c.out = grpc_raw_byte_buffer_create(&s, 1);
  grpc_slice_unref(s);
  c.pending.Clear();
  grpc_op op{};
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = c.out;
  c.writing = c.batch(&op, 1, c.written);
}

void RlqsServer::end(RlqsCall& c, int code, const std::string& text) {
  if (c.ending || c.gone) return;
  c.ending = true;
  // (a stream refused at once has sent no initial metadata yet: it goes with the status)
  grpc_op ops[2] = {};
  size_t n = 0;
  if (!c.hello_sent) {
    c.hello_sent = true;
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = static_cast<grpc_status_code>(code);
  if (code != GRPC_STATUS_OK) {
    c.details = grpc_slice_from_copied_buffer(text.data(), text.size());
    ops[n].data.send_status_from_server.status_details = &c.details;
  }
  ++n;
  c.batch(ops, n, c.status);
}

void RlqsServer::maybe_free(RlqsCall& c) {
  if (c.gone && c.batches == 0 && !c.job) c.self.reset();  // (last: it may free `c`)
}

// Between the queue's events: nothing unless a slice is due or it is time to look (the
// streams are gone through then, not at every event — the door's calls pass here too).
void RlqsServer::tick(Lane& lane) {
  if (live_.empty()) return;
  const int64_t now = svc_.clock->now_ns();
  // A policy or the rules changed, or a bucket has a new holder (others' shares shrink):
  // every stream looks again now, not at its next slice.
  const uint64_t seen[3] = {svc_.policies->version(), rules_.version(), quota_.arrivals()};
  const bool all = !std::equal(std::begin(seen), std::end(seen), std::begin(seen_));
  if (!all && now < next_scan_ns_) return;
  std::copy(std::begin(seen), std::end(seen), std::begin(seen_));
  next_scan_ns_ = now + kLookNs;
  // (a copy: a job that answers at once may end a stream, which leaves live_)
  std::vector<std::shared_ptr<RlqsCall>> streams = live_;
  for (const auto& c : streams) {
    if (c->job) continue;  // (its answer notes its next slice)
    if (all || c->next_due <= now) {
      run(*c, lane);
    } else {
      next_scan_ns_ = std::min(next_scan_ns_, c->next_due);
    }
  }
}

int64_t RlqsServer::wait_ns() const {
  if (live_.empty()) return -1;
  return std::max<int64_t>(0, next_scan_ns_ - svc_.clock->now_ns());
}

}  // namespace fg
