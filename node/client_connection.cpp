// The connection shell's loop, for both byte-stream doors.
#include "client_connection.hpp"

#include <spdlog/spdlog.h>

#include "errors.hpp"
#include "grpc_session.hpp"
#include "native_session.hpp"
#include "resp_session.hpp"
#include "services.hpp"

namespace fg {

template <class Session>
ClientConnection<Session>::ClientConnection(std::unique_ptr<ClientStream> stream, Services& svc,
                                            std::shared_ptr<const ConnectionLimits> limits,
                                            IoBatcher& batcher)
    : stream_(std::move(stream)),
      timer_(stream_->executor()),
      stall_timer_(stream_->executor()),
      block_timer_(stream_->executor()),
      svc_(svc),
      limits_(std::move(limits)),
      batcher_(batcher),
      in_(Session::kInitialInput, Session::max_input(limits_->max_query_bytes)) {}

template <class Session>
ClientConnection<Session>::~ClientConnection() {
  svc_.counters.connections_closed.fetch_add(1, std::memory_order_relaxed);
  unregister_client(svc_, client_);
  if (session_) session_->closing();
}

template <class Session>
void ClientConnection<Session>::start() {
  auto me = self();
  stream_->secure(me, limits_->query_deadline_ms.load(std::memory_order_relaxed),
                  svc_.tls ? &svc_.tls->counters : nullptr, [me](bool ok) {
                    if (ok) me->serve();
                  });
}

template <class Session>
void ClientConnection<Session>::serve() {
  client_ = register_client(*stream_, svc_, Session::kDoor);
  if (!client_) {
    // Over --maxclients: say so (if the protocol has words for it), then close.
    std::string out;
    Session::refuse_full(out);
    close_after_write_ = true;
    asio::error_code ec;
    if (out.empty() || stream_->write(out, ec, self())) close();
    return;
  }
  session_ = std::make_unique<Session>(svc_, client_);
  // The client registry wakes a connection it has chosen to evict (maxmemory-clients), and
  // every connection when the users change.
  svc_.clients->set_wake(
      *client_, [weak = std::weak_ptr<ClientConnection>(self()), ex = stream_->executor()] {
        asio::post(ex, [weak] {
          if (auto me = weak.lock(); me && !me->closed_) me->on_wake();
        });
      });
  session_->set_push_wake(
      [weak = std::weak_ptr<ClientConnection>(self()), ex = stream_->executor()] {
        asio::post(ex, [weak] {
          if (auto me = weak.lock(); me && !me->closed_) me->on_pushes();
        });
      });
  clock_.last_read_ms = connection_now_ms();
  arm_timer();
  // (a protocol whose server speaks first — HTTP/2's SETTINGS — made its words already)
  if (!session_->output().empty() && !write()) return;
  read();
}

template <class Session>
void ClientConnection<Session>::on_wake() {
  if (was_killed(false)) return;
  if (!account() || busy()) return;  // (busy: the flight's completion looks at the rights)
  if (session_->rights_hold()) return;
  spdlog::info(
      "{} {} closed: its user was removed or disabled, or may no longer hear what it "
      "listens to",
      Session::kClientWord, client_->addr);
  close();
}

template <class Session>
void ClientConnection<Session>::on_pushes() {
  // (in flight: batch_complete takes them after the batch's replies. While a write is under
  // way they join the output and on_written sends them; the mailbox counts what waits
  // there against the hard limit)
  if (in_flight_) return;
  const bool some = take_pushes();
  if (closed_) return;
  // (messages for a client that is not reading pile up in its output: counted against
  // maxmemory-clients as they come, not at its next tick)
  if (some && !account()) return;
  if (some && !writing_ && write()) pump();
  if (!closed_ && !busy() && session_->wants_turn()) pump();  // (a key it waits on changed)
}

template <class Session>
bool ClientConnection<Session>::take_pushes() {
  switch (session_->take_pushes(stream_->unsent_bytes())) {
    case Pushes::kNone:
      return false;
    case Pushes::kSome:
      return true;
    case Pushes::kOverflow:
      break;
  }
  svc_.counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("{} {} dropped: its messages passed client-output-buffer-limit's pubsub hard limit",
               Session::kClientWord, client_->addr);
  close();
  return false;
}

template <class Session>
void ClientConnection<Session>::read() {
  if (reading_ || closed_ || close_after_write_) return;
  // A session that views its input: nothing may move it until its flight is back.
  if (Session::kViewsInput && busy()) return;
  if (!in_.make_room()) {
    if (busy()) return;  // full: processing what is in it makes room
    // One request larger than the input may hold.
    session_->input_too_large();
    close_after_write_ = true;
    write();
    return;
  }
  if (!account()) return;
  // A deadline stated (request-deadline, FG.DEADLINE): from now on the kernel tells when
  // the input arrived, so what waited past it is refused undecided (api/COMMANDS.md).
  if (!stamping_ && (svc_.settings.request_deadline_ms > 0 ||
                     client_->deadline_ms.load(std::memory_order_relaxed) > 0)) {
    stamping_ = true;
    stream_->stamp_input();
  }
  reading_ = true;
  stream_->read_some(in_.space(), in_.space_size(), self());
}

template <class Session>
void ClientConnection<Session>::on_read(asio::error_code ec, size_t n) {
  reading_ = false;
  if (ec) return close();
  if (closed_) return;
  in_.filled(n);
  clock_.last_read_ms = connection_now_ms();
  if (stamping_) client_->received_ns = stream_->received_ns();
  // A read of more than a little: this connection has a backlog, and takes its batches
  // through the queue from now on; a small one again, and it is served at once.
  if (n > kQuickRead) {
    backlogged_ = true;
  } else if (!queued_) {
    backlogged_ = false;
  }
  IoBatcher::Turn turn(batcher_);
  pump();
}

template <class Session>
void ClientConnection<Session>::take_turn() {
  queued_ = false;
  if (closed_) return;
  in_turn_ = true;
  pump();
  in_turn_ = false;
}

template <class Session>
void ClientConnection<Session>::pump() {
  if (backlogged_ && !in_turn_ && !busy() && !in_.empty() && !closed_) {
    // Its input waits for its turn in the backlog queue (fair reading).
    if (!queued_) {
      queued_ = true;
      batcher_.queue_backlog(self());
    }
    return;
  }
  // (a blocked client takes its turns with no input: its next attempt, or its timeout, or
  // when neither is due the timer for them)
  while (!closed_ && !busy() && (!in_.empty() || session_->blocked())) {
    ProcessResult r = session_->process(in_.data(), in_.size(), batcher_.current());
    if (r.submitted) {
      // Its requests ride in this turn's batch; the replies come back in batch_complete().
      in_flight_ = true;
      if (Session::kViewsInput) {
        pending_consumed_ = r.consumed;
      } else {
        in_.consume(r.consumed);
      }
      pending_close_ = r.close;
      batcher_.join(self());
      break;
    }
    in_.consume(r.consumed);
    if (r.close) close_after_write_ = true;
    if (!session_->output().empty() || close_after_write_) {
      if (!write()) break;
      continue;
    }
    if (r.stalled) {
      // A slot moving here: its state arrives within milliseconds (or the wait times out).
      stalled_ = true;
      stall_timer_.expires_after(std::chrono::milliseconds(2));
      stall_timer_.async_wait([me = self()](asio::error_code ec) {
        me->stalled_ = false;
        if (!ec && !me->closed_) me->pump();
      });
      break;
    }
    if (r.retry_ms > 0) {  // blocked: the next attempt (a wake may come sooner)
      block_timer_.expires_after(std::chrono::milliseconds(r.retry_ms));
      block_timer_.async_wait([me = self()](asio::error_code ec) {
        if (!ec && !me->closed_ && !me->busy()) me->pump();
      });
      break;
    }
    if (r.consumed == 0) break;  // only part of a request is here
  }
  if (closed_) return;
  if (!in_flight_) clock_.input_left(in_.empty(), connection_now_ms());
  read();
}

template <class Session>
void ClientConnection<Session>::batch_complete(Flight& flight) {
  in_flight_ = false;
  session_->complete(flight);
  in_.consume(pending_consumed_);
  pending_consumed_ = 0;
  if (session_->evicted()) {
    svc_.clients->count_eviction();
    spdlog::info(
        "client {} evicted: its replies outgrew what maxmemory-clients ({} bytes) and "
        "client-output-buffer-limit ({} bytes) left them",
        client_->addr, svc_.clients->max_memory(), svc_.settings.output_limits.normal.hard_bytes);
    return close();
  }
  if (pending_close_) close_after_write_ = true;
  if (client_->killed.load(std::memory_order_relaxed) && !close_after_write_) {
    spdlog::info("{} {} closed by CLIENT KILL", Session::kClientWord, client_->addr);
    close_after_write_ = true;  // (its batch's replies first: it may have killed itself)
  }
  if (closed_) return;
  take_pushes();
  if (closed_) return;
  if ((!session_->output().empty() || close_after_write_) && !write()) return;
  pump();
}

template <class Session>
bool ClientConnection<Session>::write() {
  if (closed_ || writing_) return false;
  asio::error_code ec;
  if (!stream_->write(session_->output(), ec, self())) {
    writing_ = true;  // the stream's buffer is full: the client is slow to read
    clock_.write_since_ms = connection_now_ms();
    account();
    return false;
  }
  if (ec || close_after_write_) {
    close();
    return false;
  }
  return true;
}

template <class Session>
void ClientConnection<Session>::on_written(asio::error_code ec) {
  writing_ = false;
  if (ec || close_after_write_) return close();
  if (closed_ || !session_) return;
  // Pushes made while the rest was being written.
  if (!in_flight_) take_pushes();
  if (closed_) return;
  if (!session_->output().empty() && !in_flight_ && !write()) return;
  pump();
}

template <class Session>
bool ClientConnection<Session>::account() {
  const auto bytes =
      static_cast<int64_t>(in_.capacity() + session_->output().capacity() + stream_->held_bytes()) +
      session_->held_bytes() + client_->bus_bytes->load(std::memory_order_relaxed);
  if (account_memory(svc_, *client_, bytes, reported_bytes_, connection_now_ms())) return true;
  close();
  return false;
}

// CLIENT KILL chose it: closed now, unless a batch is in flight (its completion closes it
// once the batch's replies are written, so that a client that killed itself hears +OK;
// replies still unwritten at the next tick are not waited for).
template <class Session>
bool ClientConnection<Session>::was_killed(bool on_tick) {
  if (!client_->killed.load(std::memory_order_relaxed)) return false;
  if (in_flight_ || (close_after_write_ && !on_tick)) return true;
  if (!close_after_write_)
    spdlog::info("{} {} closed by CLIENT KILL", Session::kClientWord, client_->addr);
  close();
  return true;
}

template <class Session>
void ClientConnection<Session>::close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  stall_timer_.cancel();
  block_timer_.cancel();
  stream_->shut();
}

template <class Session>
void ClientConnection<Session>::arm_timer() {
  timer_.expires_after(std::chrono::milliseconds(Session::kTickMs));
  timer_.async_wait([me = self()](asio::error_code ec) {
    if (ec || me->closed_) return;
    me->tick();
    if (!me->closed_) me->arm_timer();
  });
}

// On each tick: the session's pushes, then the defences — slowloris senders, silent
// idlers, clients that stopped reading.
template <class Session>
void ClientConnection<Session>::tick() {
  if (was_killed(true) || !account()) return;
  if (session_->tick() && !busy() && write()) pump();
  if (closed_) return;
  ConnectionState st;
  st.writing = writing_;
  st.waiting_for_input = !busy();
  st.input_empty = in_.empty();
  st.subscribed = session_->subscribed() || session_->blocked();  // (waits for the server)
  const char* why = deadline_breach(*limits_, clock_, st, connection_now_ms(), svc_.counters);
  if (!why) why = output_breach();
  if (!why) return;
  if (*why) spdlog::info("{} {} dropped: {}", Session::kClientWord, client_->addr, why);
  close();
}

// client-output-buffer-limit's soft limit (and its hard one, for output that piled up
// while the client did not read).
template <class Session>
const char* ClientConnection<Session>::output_breach() {
  const OutputLimit& l = session_->output_limit();
  const auto pending = static_cast<int64_t>(session_->output().size() + stream_->unsent_bytes());
  const int64_t now = connection_now_ms();
  if (l.hard_bytes > 0 && pending > l.hard_bytes) {
    svc_.counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
    return "its replies passed client-output-buffer-limit's hard limit";
  }
  if (l.soft_bytes == 0 || pending <= l.soft_bytes) {
    over_soft_since_ms_ = 0;
    return nullptr;
  }
  if (over_soft_since_ms_ == 0) over_soft_since_ms_ = now;
  if (now - over_soft_since_ms_ < l.soft_s * 1000) return nullptr;
  svc_.counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
  return "its replies stayed past client-output-buffer-limit's soft limit";
}

template class ClientConnection<RespSession>;
template class ClientConnection<NativeSession>;
template class ClientConnection<GrpcSession>;

}  // namespace fg
