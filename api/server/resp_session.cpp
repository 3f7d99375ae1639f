// The RESP door: parse, dispatch to handlers, hand keyed work to the request core, encode
// replies in request order.
#include "resp_session.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

#include "command_table.hpp"
#include "errors.hpp"
#include "gcra.hpp"
#include "handlers.hpp"
#include "key_slot.hpp"
#include "lease_upkeep.hpp"
#include "request_metrics.hpp"
#include "script_engine.hpp"

namespace fg {

namespace {
void hex16(uint64_t v, char* out) {
  static const char* d = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = d[v & 15];
}
}  // namespace

void write_take_all(RespWriter& w, const TakeAllResult& r) {
  if (!r.error.empty()) return w.error(r.error);
  w.array(1 + r.decisions.size());
  w.integer(r.allowed ? 1 : 0);
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    Outcome o;
    o.decision = r.decisions[i];
    o.unavailable = i < r.unavailable.size() ? r.unavailable[i] : FailMode::kError;
    write_outcome(w, o, ReplyStyle::kDecision);
  }
}

void write_outcome(RespWriter& w, const Outcome& o, ReplyStyle style) {
  if (!o.ok()) return w.error(o.error);
  const bool unavailable = o.unavailable != FailMode::kError;
  // A policy's fail mode answered: the usual reply, plus a sixth element saying which.
  auto mode = [&] {
    if (unavailable) w.bulk(o.unavailable == FailMode::kOpen ? "fail_open" : "fail_closed");
  };
  const size_t n = unavailable ? 6 : 5;
  const Decision& d = o.decision;
  switch (style) {
    case ReplyStyle::kThrottle:
    case ReplyStyle::kGcra:
    case ReplyStyle::kDecision: {
      // CL.THROTTLE says "limited" and counts in redis-cell's seconds, GCRA in seconds rounded
      // up (Redis's gcra.c: ceil); FG.* in milliseconds.
      const bool cell = style != ReplyStyle::kDecision;
      auto duration = [style](int64_t ns) {
        return style == ReplyStyle::kThrottle ? redis_cell_seconds(ns)
               : style == ReplyStyle::kGcra   ? (ns < 0 ? -1 : (ns + kNsPerSec - 1) / kNsPerSec)
                                              : ceil_ms(ns);
      };
      w.array(n);
      w.integer(d.allowed != cell ? 1 : 0);
      w.integer(d.limit);
      // (Redis's GCRA counts none available, never fewer: a key whose state another period
      // left far ahead)
      w.integer(style == ReplyStyle::kGcra ? std::max<int64_t>(0, d.remaining) : d.remaining);
      w.integer(duration(d.retry_after_ns));
      w.integer(duration(d.reset_after_ns));
      return mode();
    }
    case ReplyStyle::kAcquire: {
      const AcquireResult& a = o.acquire;
      w.array(n);
      w.integer(a.granted ? 1 : 0);
      if (a.granted && a.lease_id != 0) {
        char hex[16];
        hex16(a.lease_id, hex);
        w.bulk(std::string_view(hex, 16));
      } else {
        w.null();  // denied, or admitted by fail_open: no lease to renew or release
      }
      w.integer(a.held);
      w.integer(o.limit);
      w.integer(a.granted ? -1 : ceil_ms(a.retry_after_ns));
      return mode();
    }
    case ReplyStyle::kInteger:
      return w.integer(o.value);
    case ReplyStyle::kData:
      return o.reply ? write_reply(w, *o.reply) : w.null();
  }
}

void write_reply(RespWriter& w, const DataReply& r) {
  using T = ReplyItem::Type;
  for (const ReplyItem& i : r.items) {
    switch (i.type) {
      case T::kInt:
        w.integer(i.n);
        break;
      case T::kBulk:
        w.bulk(i.s);
        break;
      case T::kNull:
        w.null();
        break;
      case T::kStatus:
        w.simple(i.s);
        break;
      case T::kError:
        w.error(i.s);
        break;
      case T::kArray:
        w.array(static_cast<size_t>(i.n));
        break;
      case T::kMap:
        w.map(static_cast<size_t>(i.n));
        break;
      case T::kNullArray:
        w.null_array();
        break;
      case T::kDouble:
        if (w.proto() >= 3) {
          w.raw(",");
          w.raw(i.s);
          w.raw("\r\n");
        } else {
          w.bulk(i.s);
        }
        break;
      case T::kSet:
        w.set(static_cast<size_t>(i.n));
        break;
      case T::kBool:
        w.boolean(i.n != 0);
        break;
      case T::kBigNumber:
        if (w.proto() >= 3) {
          w.raw("(");
          w.raw(i.s);
          w.raw("\r\n");
        } else {
          w.bulk(i.s);
        }
        break;
      case T::kVerbatim:
        if (w.proto() >= 3) {
          w.raw("=" + std::to_string(i.s.size()) + "\r\n");
          w.raw(i.s);
          w.raw("\r\n");
        } else {
          w.bulk(std::string_view(i.s).substr(std::min<size_t>(4, i.s.size())));
        }
        break;
    }
  }
}

RespSession::RespSession(Services& svc, std::shared_ptr<ClientInfo> client)
    : CommandContext(svc, std::move(client)), core_(svc), parser_(svc.settings.parser) {
  door_.client_id = client_->id;
  door_.texts = &arena_;  // cleared with each read, once its replies are written
}

bool CommandContext::redirects() const {
  using R = NodeSettings::Redirect;
  const R mode = svc_.settings.redirect;
  return mode == R::kAlways || (mode == R::kAuto && cluster_aware_);
}

const Door& RespSession::door() {
  door_.mode = redirects() ? RouteMode::kMove : RouteMode::kForward;
  return door_;
}

void RespSession::request(Request& r, ReplyStyle style) {
  requested_ = true;
  r.metric = cur_cmd_;
  r.asker = acl().user();
  if (cur_cmd_ < all_commands().size()) r.command = all_commands()[cur_cmd_].name;
  r.txn = txn_;
  const Pending p = core_.submit(r, door(), *flight_, now_);
  if (!p.waits()) {  // (rare: a refusal, a redirect or a fail mode, answered at once)
    const size_t start = local_.size();
    RespWriter w = local();
    write_outcome(w, now_, style);
    now_ = Outcome{};
    slots_.push_back(Slot{Slot::Type::kLocal,
                          style,
                          cur_cmd_,
                          true,
                          static_cast<uint32_t>(start),
                          static_cast<uint32_t>(local_.size() - start),
                          {}});
    return;
  }
  slots_.push_back(Slot{Slot::Type::kPending, style, cur_cmd_, false, 0, 0, p});
  if (r.wait_ms > 0) {
    wait_takes_.push_back(Waiter{std::string(r.key), r.spec, r.cost});
    slots_.back().aux = static_cast<uint32_t>(wait_takes_.size());
  }
  ++pending_;
}

void RespSession::block(Request& r, int64_t timeout_ms) {
  if (in_multi_ || running_exec_) return request(r, ReplyStyle::kData);  // (tried once)
  // The first attempt: its words are kept for the next ones, and its keys are watched.
  block_.data = r.data;
  block_.cmd = cur_cmd_;
  block_.words.assign(r.args->begin(), r.args->end());
  block_.args.assign(block_.words.begin(), block_.words.end());
  block_.deadline_ns = timeout_ms > 0 ? steady_ns() + timeout_ms * 1'000'000 : 0;
  std::vector<std::string> keys;
  together_keys(r.data, block_.args).each([&](size_t j) { keys.push_back(block_.words[j]); });
  woken_->store(false);
  block_.ticket = svc_.waiters.add(keys, [woken = woken_, wake = push_wake_] {
    woken->store(true);
    if (wake) wake();
  });
  client_->unblock.store(0);
  client_->block_ticket.store(block_.ticket);
  submit_block(r);
  block_started_ = true;
}

void RespSession::submit_block(Request& r) {
  request(r, ReplyStyle::kData);
  if (!slots_.empty() && slots_.back().type == Slot::Type::kPending) {
    slots_.back().type = Slot::Type::kBlock;
  } else {
    end_block();  // (answered at once: a refusal or a redirect)
  }
}

// XREAD BLOCK's first attempt that found nothing names, after its null, each stream's last
// ID then (Shard::stream_read): its "$" words become those IDs, so the next attempts read
// what came after the wait began, as Redis serves a blocked XREAD.
void RespSession::take_stream_ids(const DataReply& reply) {
  const auto [first, end] = keys_after_streams(block_.words);
  const size_t n = end - first;
  if (n == 0 || reply.items.size() != 1 || reply.items[0].s.empty()) return;
  std::vector<std::string> ids;
  std::string_view text = reply.items[0].s;
  while (!text.empty()) {
    const size_t space = text.find(' ');
    ids.emplace_back(text.substr(0, space));
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
  if (ids.size() != n) return;
  for (size_t k = 0; k < n; ++k) {
    std::string& w = block_.words[end + k];
    if (w == "$") w = ids[k];
  }
  block_.args.assign(block_.words.begin(), block_.words.end());
}

void RespSession::end_block() {
  if (block_.ticket != 0) svc_.waiters.remove(block_.ticket);
  client_->block_ticket.store(0);
  block_ = Block{};
  blocked_ = false;
}

bool RespSession::held_ready() const {
  if (steady_ns() < held_due_ns_) return false;
  for (const HeldPart& p : held_) {
    if (p.all && !p.all->ready.load(std::memory_order_acquire)) return false;
  }
  return true;
}

bool RespSession::wants_turn() const {
  if (!held_.empty()) return held_ready();
  if (!blocked_) return false;
  const int64_t now = steady_ns();
  return woken_->load() || client_->unblock.load() != 0 || now >= next_try_ns_ ||
         (block_.deadline_ns != 0 && now >= block_.deadline_ns);
}

void RespSession::end_local_slot(size_t start) {
  if (local_.size() > start) {
    slots_.push_back(Slot{Slot::Type::kLocal,
                          ReplyStyle::kInteger,
                          cur_cmd_,
                          false,
                          static_cast<uint32_t>(start),
                          static_cast<uint32_t>(local_.size() - start),
                          {}});
  }
}

ProcessResult RespSession::process(const char* data, size_t len, Flight& flight) {
  ProcessResult r;
  flight_ = &flight;
  if (svc_.routing && svc_.routing->version() != routing_version_) {
    routing_version_ = svc_.routing->version();
    routing_ = svc_.routing->get();
    door_.routing = routing_.get();
  }
  arrived_ns_ = steady_ns();
  batch_in_ = {};
  scripts_ = 0;
  late_ms_ = waited_past_deadline();
  // With maxmemory-clients, a batch's data replies may take what the cap leaves (at least
  // kMinReplyRoom, so a lone big reply still goes out), and with client-output-buffer-limit
  // no more than its hard limit; past that the connection is closed.
  door_.reply_room = nullptr;
  int64_t room = INT64_MAX;
  if (const int64_t cap = svc_.clients->max_memory(); cap > 0 && !client_->no_evict) {
    room = std::max(kMinReplyRoom, cap - svc_.clients->memory());
  }
  if (const int64_t hard = output_limit().hard_bytes; hard > 0) {
    room = std::min(room, hard - static_cast<int64_t>(out_.size()));
  }
  if (room != INT64_MAX) {
    reply_room_.store(room, std::memory_order_relaxed);
    door_.reply_room = &reply_room_;
  }
  executing_.clear();  // (the last flight, which ran them, is back)
  watching_.clear();
  watch_words_.clear();
  slots_.clear();
  local_.clear();
  arena_.clear();
  pending_ = 0;
  // (nothing in flight: the user's rules may change here) A connection whose user was
  // removed or disabled is closed, as Redis does.
  if (!rights_hold()) close_ = true;
  if (!held_.empty()) {
    // Replies held for a waiting take or an FG.TAKEALL: sent when it is due (or done), then
    // the input is read again.
    const int64_t now = steady_ns();
    if (!held_ready()) {
      // (an FG.TAKEALL wakes the connection when done; the timer is the safety net)
      r.retry_ms = now < held_due_ns_
                       ? std::max<int64_t>(1, (held_due_ns_ - now + 999'999) / 1'000'000)
                       : 50;
    } else {
      RespWriter w(out_, proto_);
      for (const HeldPart& p : held_) {
        if (p.all) {
          write_take_all(w, p.all->result);
        } else {
          out_ += p.bytes;
        }
      }
      release_held();
    }
    flight_ = nullptr;
    return r;
  }
  if (blocked_ && !close_) {
    // Waiting on keys: nothing after the blocking command is read until it is answered.
    const int64_t now = steady_ns();
    const uint8_t unblock = client_->unblock.exchange(0);  // (CLIENT UNBLOCK)
    if (unblock == 2) {
      RespWriter(out_, proto_).error(err::kUnblocked);
      svc_.errors.count(std::string("-") + err::kUnblocked);
      svc_.metrics->record(block_.cmd, RequestResult::kError, 0);
      end_block();
    } else if (unblock == 1 || (block_.deadline_ns != 0 && now >= block_.deadline_ns)) {
      RespWriter(out_, proto_).null_array();  // (timed out)
      svc_.metrics->record(block_.cmd, RequestResult::kOk, 0);
      end_block();
    } else if (woken_->exchange(false) || now >= next_try_ns_) {
      cur_cmd_ = block_.cmd;
      Request again;
      again.verb = Verb::kData;
      again.data = block_.data;
      again.resp3 = proto_ >= 3;
      again.waited = true;
      again.key = data_route_key(block_.data, block_.args);
      again.args = &block_.args;
      submit_block(again);
      r.submitted = pending_ > 0;
      if (!r.submitted) complete(flight);
      flight_ = nullptr;
      return r;
    } else {
      const int64_t until =
          block_.deadline_ns != 0 ? std::min(block_.deadline_ns, next_try_ns_) : next_try_ns_;
      r.retry_ms = std::max<int64_t>(1, (until - now + 999'999) / 1'000'000);
      flight_ = nullptr;
      return r;
    }
  }
  size_t taken = 0, late = 0;
  parser_.set_max_bulk_len(svc_.settings.max_bulk_len.get());  // (CONFIG SET may change it)
  while (r.consumed < len && taken < svc_.settings.max_batch_commands && !close_) {
    if (late_ms_ > 0 && late < 16 * svc_.settings.max_batch_commands) {
      if (const size_t n = refuse_late(data + r.consumed, len - r.consumed)) {
        r.consumed += n;
        late += slots_.back().aux;
        continue;
      }
    }
    ParseResult pr = parser_.parse(data + r.consumed, len - r.consumed, args_, arena_);
    if (pr.status == ParseStatus::kNeedMore) break;
    if (pr.status == ParseStatus::kError) {
      svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      cur_cmd_ = kUnknownCommandId;
      const size_t start = local_.size();
      local().error(pr.error);
      end_local_slot(start);
      close_ = true;
      r.consumed = len;
      break;
    }
    if (args_.empty()) {
      r.consumed += pr.consumed;
      continue;
    }
    // Pipelines repeat one command: the last lookup (found or not) is kept, by the name's
    // exact bytes. Command names are short: a longer name is never cached whole, so never
    // matches.
    if (args_[0] != last_name_) {
      last_spec_ = find_command(args_[0]);
      last_name_.assign(args_[0].substr(0, 32));
    }
    const CommandSpec* spec = last_spec_;
    cur_cmd_ = spec ? command_id(spec) : kUnknownCommandId;
    if (spec && (spec->flags & kBarrier) && pending_ > 0) break;  // after the work ahead of it
    if (spec && (spec->flags & kScript) && !in_multi_ && scripts_ >= script_allowance_) break;
    // (FG.TAKEALL starts its rounds as it is read: a batch starts at most kTakeAllsPerBatch,
    // so one pipeline cannot put thousands of reservations in flight at once)
    if (spec && take_alls_.size() >= kTakeAllsPerBatch && !in_multi_ &&
        std::string_view(spec->name) == "fg.takeall") {
      break;
    }
    if (watch_pending_ && spec) {  // (they need the tokens WATCH is fetching)
      const std::string_view n = spec->name;
      if (n == "exec" || n == "discard" || n == "unwatch") break;
    }
    if (routing_ && spec && spec->keyed() && args_.size() >= 2 &&
        core_.must_wait(args_[1], routing_.get())) {
      r.stalled = true;  // its state is on its way here: take it up again shortly
      break;
    }
    r.consumed += pr.consumed;
    ++taken;
    if (spec && (spec->flags & kScript) && !in_multi_) ++scripts_;
    const size_t start = local_.size();
    requested_ = false;
    if (in_multi_ && queue(spec)) {
      end_local_slot(start);
      show_state();
      continue;
    }
    // CLIENT REPLY OFF, or SKIP before it: this command's replies are not sent.
    bool silent =
        (reply_mode_ == ReplyMode::kOff || skip_this_) && !(spec && (spec->flags & kPushes));
    skip_this_ = false;
    replies_turned_on_ = false;
    const size_t first_slot = slots_.size();
    if (refused(spec)) {
    } else if (late_ms_ > 0 && (spec->flags & kDecides)) {
      // Waited past the caller's deadline: a decision now would come too late to matter.
      local().error(err::past_deadline(late_ms_, deadline_ms()));
      svc_.counters.past_deadline.fetch_add(1, std::memory_order_relaxed);
    } else {
      client_->last_cmd.store(spec->name, std::memory_order_relaxed);
      run_command(*spec, *this, args_);
    }
    if (!requested_) end_local_slot(start);
    if (replies_turned_on_) silent = false;
    show_state();
    if (silent) {
      for (size_t k = first_slot; k < slots_.size(); ++k) slots_[k].silent = true;
    }
    if (reply_mode_ == ReplyMode::kSkipNext) {
      reply_mode_ = ReplyMode::kOn;
      skip_this_ = true;
    }
    if (block_started_) {  // (what follows a blocking command waits for its answer)
      block_started_ = false;
      break;
    }
  }
  if (late > 0) svc_.counters.past_deadline.fetch_add(late, std::memory_order_relaxed);
  taken += late;
  if (taken > 0) {
    svc_.counters.commands.fetch_add(taken, std::memory_order_relaxed);
    client_->last_active_mono_ms.store(arrived_ns_ / 1'000'000, std::memory_order_relaxed);
  }
  r.close = close_;
  r.submitted = pending_ > 0;
  batch_in_ = std::string_view(data, r.consumed);
  if (!r.submitted) complete(flight);
  flight_ = nullptr;
  policies_checked_ = false;  // the next read sees policy changes
  return r;
}

namespace {
// A length line's number ("6\r\n"), at most 10 digits; q moves past it.
bool scan_number(const char*& q, const char* end, int64_t& n) {
  n = 0;
  const char* start = q;
  while (q < end && *q >= '0' && *q <= '9' && q - start < 10) n = n * 10 + (*q++ - '0');
  if (q == start || end - q < 2 || q[0] != '\r' || q[1] != '\n') return false;
  q += 2;
  return true;
}

// One whole command at p, a RESP array of bulk strings: its length, its name and how many
// words it has; 0 if it is not whole here or not that plain (the parser then takes it, and
// answers whatever is wrong with it).
size_t scan_command(const char* p, size_t len, size_t max_bulk, std::string_view& name,
                    size_t& words) {
  const char* q = p;
  const char* end = p + len;
  int64_t n;
  if (q == end || *q++ != '*' || !scan_number(q, end, n) || n < 1 || n > 64) return 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t l;
    if (q == end || *q++ != '$' || !scan_number(q, end, l) || static_cast<size_t>(l) > max_bulk ||
        end - q < l + 2 || q[l] != '\r' || q[l + 1] != '\n') {
      return 0;
    }
    if (i == 0) name = std::string_view(q, static_cast<size_t>(l));
    q += l + 2;
  }
  words = static_cast<size_t>(n);
  return static_cast<size_t>(q - p);
}
}  // namespace

size_t RespSession::refuse_late(const char* data, size_t len) {
  // (only where a refusal is all a command would get: a transaction queues, a subscribed
  // RESP2 connection and a user with limits answer their own way, CLIENT REPLY its own)
  // (nor while the parser holds part of a command: it goes on from where it stopped)
  if (parser_.in_progress() || in_multi_ || watch_pending_ || reply_mode_ != ReplyMode::kOn ||
      skip_this_ || in_subscribe_mode() || !acl_.authenticated() || !acl_.user()->unrestricted()) {
    return 0;
  }
  const size_t max_bulk = svc_.settings.max_bulk_len.get();
  const CommandSpec* run = nullptr;
  size_t taken = 0;
  uint32_t count = 0;
  while (taken < len) {
    std::string_view name;
    size_t words = 0;
    const size_t n = scan_command(data + taken, len - taken, max_bulk, name, words);
    if (n == 0) break;
    if (name != last_name_) {
      last_spec_ = find_command(name);
      last_name_.assign(name.substr(0, 32));
    }
    const CommandSpec* spec = last_spec_;
    if (!spec || !(spec->flags & kDecides) || (run && spec != run) ||
        (spec->arity > 0 && words != static_cast<size_t>(spec->arity)) ||
        (spec->arity < 0 && words < static_cast<size_t>(-spec->arity))) {
      break;
    }
    run = spec;
    taken += n;
    ++count;
  }
  if (count == 0) return 0;
  const size_t start = local_.size();
  local().error(err::past_deadline(late_ms_, deadline_ms()));
  slots_.push_back(Slot{Slot::Type::kLate,
                        ReplyStyle::kInteger,
                        command_id(run),
                        false,
                        static_cast<uint32_t>(start),
                        static_cast<uint32_t>(local_.size() - start),
                        {},
                        count});
  client_->last_cmd.store(run->name, std::memory_order_relaxed);
  return taken;
}

int64_t RespSession::deadline_ms() const {
  const int64_t mine = client_->deadline_ms.load(std::memory_order_relaxed);
  return mine >= 0 ? mine : svc_.settings.request_deadline_ms.get();
}

// How long the input waited since it reached the host, when that is past the deadline; else
// 0. (The kernel stamps the newest bytes read: what is older waited at least as long.)
int64_t RespSession::waited_past_deadline() const {
  const int64_t rx = client_->received_ns;
  if (rx <= 0) return 0;
  const int64_t deadline = deadline_ms();
  if (deadline <= 0) return 0;
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t waited_ms =
      (static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec - rx) / 1'000'000;
  return waited_ms > deadline ? waited_ms : 0;
}

bool RespSession::refused(const CommandSpec* spec) {
  if (!spec) {
    local().error(err::unknown_command(args_));
  } else if ((spec->arity > 0 && static_cast<int>(args_.size()) != spec->arity) ||
             (spec->arity < 0 && static_cast<int>(args_.size()) < -spec->arity)) {
    local().error(err::wrong_arity(spec->name));
  } else if (const SubcommandSpec* sub = subcommand_of(*spec, args_);
             sub && sub->arity != 0 &&
             ((sub->arity > 0 && static_cast<int>(args_.size()) != sub->arity) ||
              (sub->arity < 0 && static_cast<int>(args_.size()) < -sub->arity))) {
    local().error(err::wrong_arity(std::string(spec->name) + "|" + sub->name));
  } else if (!acl_.authenticated() && !(spec->flags & kNoAuth)) {
    local().error(err::kNoAuth);
  } else if (acl_refuses(*spec, args_, in_multi_ ? "multi" : "toplevel")) {
  } else if (in_subscribe_mode() && !(spec->flags & kSubscribeMode)) {
    local().error(err::subscribe_context(spec->name));
  } else {
    return false;
  }
  return true;
}

bool RespSession::queue(const CommandSpec* spec) {
  if (spec && (spec->flags & kNotQueued)) return false;
  if (spec && !spec->subcommands.empty() && args_.size() >= 2 && !subcommand_of(*spec, args_)) {
    // (a container's unknown subcommand is refused before it is queued, as Redis refuses it
    // before it looks further; run alone, the container's own handler says the same)
    std::string help = spec->name;
    for (char& ch : help) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    local().error(err::unknown_subcommand(args_[1], help + " HELP"));
    multi_dirty_ = true;
    return true;
  }
  if (!refused(spec)) {
    if (spec->flags & kNoMulti) {  // (checked after its arity and rights, as Redis does)
      local().error(err::kNotInMulti);
      multi_dirty_ = true;
      return true;
    }
    queued_.emplace_back(args_.begin(), args_.end());
    queued_bytes_ += static_cast<int64_t>(sizeof(std::vector<std::string>));
    for (const std::string& w : queued_.back())
      queued_bytes_ += static_cast<int64_t>(sizeof(std::string) + w.capacity());
    local().simple("QUEUED");
    return true;
  }
  multi_dirty_ = true;  // (Redis: refused while queueing, the whole transaction goes)
  return true;
}

void RespSession::multi() {
  if (in_multi_) return local().error(err::kMultiNested);
  in_multi_ = true;
  local().ok();
}

void RespSession::discard() {
  if (!in_multi_) return local().error(err::kDiscardWithoutMulti);
  in_multi_ = multi_dirty_ = false;
  queued_.clear();
  queued_bytes_ = 0;
  release_watches();
  local().ok();
}

// WATCH: the keys' shards (their owners, in a cluster) hand out each key's version; the
// reply waits for them, so a transaction after it is checked against versions that exist.
void RespSession::watch(std::vector<std::string_view>& a) {
  if (in_multi_) return local().error(err::kWatchInMulti);
  std::vector<std::string> keys;
  for (size_t j = 1; j < a.size(); ++j) {
    const bool known = std::any_of(watched_.begin(), watched_.end(),
                                   [&](const Watched& w) { return w.key == a[j]; }) ||
                       std::find(keys.begin(), keys.end(), a[j]) != keys.end();
    if (!known) keys.emplace_back(a[j]);
  }
  if (keys.empty()) return local().ok();
  if (watched_.size() + keys.size() > err::kMaxWatchedKeys)
    return local().error(err::too_many_watched());
  std::vector<std::string> words{"watch"};
  words.insert(words.end(), keys.begin(), keys.end());
  Request r = watch_op(DataCmd::kWatch, std::move(words));
  request(r, ReplyStyle::kData);
  Slot& slot = slots_.back();
  if (slot.type != Slot::Type::kPending) return;  // (refused: nothing is watched)
  slot.type = Slot::Type::kWatch;
  slot.aux = static_cast<uint32_t>(watching_.size());
  watching_.push_back(std::move(keys));
  watch_pending_ = true;
}

Request RespSession::watch_op(DataCmd c, std::vector<std::string> words) {
  const auto& kept = watch_words_.emplace_back(std::move(words));
  exec_args_.assign(kept.begin(), kept.end());
  Request r;
  r.verb = Verb::kData;
  r.data = c;
  r.key = exec_args_[1];
  r.args = &exec_args_;
  return r;
}

void RespSession::unwatch() {
  release_watches();
  local().ok();
}

// What CLIENT LIST shows of this session, for whoever asks from another thread.
void RespSession::show_state() {
  client_->sub.store(static_cast<int32_t>(subs_.channel_count()), std::memory_order_relaxed);
  client_->psub.store(static_cast<int32_t>(subs_.pattern_count()), std::memory_order_relaxed);
  client_->ssub.store(static_cast<int32_t>(subs_.shard_count()), std::memory_order_relaxed);
  client_->multi.store(in_multi_ ? static_cast<int32_t>(queued_.size()) : -1,
                       std::memory_order_relaxed);
}

void RespSession::reset() {
  in_multi_ = multi_dirty_ = false;
  queued_.clear();
  queued_bytes_ = 0;
  release_watches();
  subs_.clear();  // (no unsubscribe pushes: Redis sends none either)
  set_proto(2);
  acl_.start(svc_.acl);
  svc_.clients->set_user(*client_, acl_.name(), acl_.account());
  svc_.clients->set_name(*client_, {});
  set_reply_mode(ReplyMode::kOn);
  client_->deadline_ms.store(-1, std::memory_order_relaxed);
  local().simple("RESET");
}

void RespSession::request_as(Request& r, Slot::Type type) {
  const size_t start = local_.size();
  const bool requested = requested_;  // (the command's own reply still needs its slot)
  request(r, ReplyStyle::kData);
  requested_ = requested;
  Slot& slot = slots_.back();
  if (slot.type == Slot::Type::kPending) {
    slot.type = type;
    return;
  }
  local_.resize(start);  // answered at once: no reply of its own (a check so has failed)
  slot.type = type;
  slot.len = 0;
  slot.aux = 1;
}

void RespSession::release_watches() {
  if (watched_.empty()) return;
  const uint32_t txn = txn_;
  txn_ = 0;
  for (const Watched& w : watched_) {
    Request r = watch_op(DataCmd::kUnwatch, {"unwatch", w.key});
    request_as(r, Slot::Type::kHidden);
  }
  txn_ = txn;
  watched_.clear();
  watched_bytes_ = 0;
}

std::vector<std::string> RespSession::take_watched() {
  std::vector<std::string> keys;
  for (Watched& w : watched_) keys.push_back(std::move(w.key));
  watched_.clear();
  watched_bytes_ = 0;
  return keys;
}

void RespSession::refuse_full(std::string& out) { RespWriter(out, 2).error(err::kMaxClients); }

void RespSession::input_too_large() {
  RespWriter(out_, proto()).error(err::kQueryBufferLimit);
  svc_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
}

void RespSession::release_held() {
  for (const Waiter& w : held_waiters_) svc_.wait_room.leave(w.key, acl_.account());
  held_waiters_.clear();
  held_.clear();
  held_due_ns_ = 0;
}

void RespSession::take_all(std::vector<TakeAllItem> items, int64_t cost) {
  if (in_multi_ || running_exec_) return local().error(err::kTakeAllHere);
  requested_ = true;
  auto st = std::make_shared<TakeAllWait>();
  take_alls_.push_back(st);
  Slot s{Slot::Type::kTakeAll, ReplyStyle::kDecision, cur_cmd_, false, 0, 0, {}};
  s.aux = static_cast<uint32_t>(take_alls_.size() - 1);
  slots_.push_back(s);
  Door d;
  d.client_id = client_->id;
  d.mode = RouteMode::kForward;  // (one reply for keys anywhere: never -MOVED)
  d.count = false;               // (counted as one command when answered)
  fg::take_all(svc_, svc_.lane(), std::move(items), cost, acl().user(), d,
               [st, wake = push_wake_](TakeAllResult r) {
                 st->result = std::move(r);
                 st->ready.store(true, std::memory_order_release);
                 if (wake) wake();
               });
}

void RespSession::closing() {
  if (!held_waiters_.empty()) {  // (never answered: their places go to whoever comes next)
    std::vector<Waiter> back = held_waiters_;
    release_held();
    give_back_waits(svc_, std::move(back));
  }
  release_held();
  end_block();
  fg::release_watches(svc_, take_watched());
  subs_.clear();
}

void RespSession::set_push_wake(std::function<void()> wake) {
  push_wake_ = wake;  // (also what wakes a client blocked on keys)
  // (what reaches its mailbox counts against maxmemory-clients as it comes)
  auto meter = [clients = svc_.clients, client = client_](int64_t bytes) {
    if (!clients || !client) return true;
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
    return clients->grow(*client, bytes, now_ms);
  };
  subs_.set_wake(std::move(wake), svc_.settings.output_limits.pubsub.hard_bytes, std::move(meter));
}

bool RespSession::rights_hold() {
  if (!acl_.stale()) return true;
  if (!acl_.refresh()) return false;
  const AclUser* u = acl_.user();
  if (!u || !subs_.active()) return true;
  for (const ChannelKind k : {ChannelKind::kChannel, ChannelKind::kShard})
    for (const std::string& c : subs_.channels(k))
      if (!u->channel_allowed(c, false)) return false;
  for (const std::string& p : subs_.patterns())
    if (!u->channel_allowed(p, true)) return false;
  return true;
}

Pushes RespSession::take_pushes(size_t unsent) {
  Subscriber* sub = subs_.subscriber();
  if (!sub) return Pushes::kNone;
  const size_t before = out_.size();
  if (!sub->take(out_)) return Pushes::kOverflow;
  sub->set_unsent(static_cast<int64_t>(unsent + out_.size()));
  return out_.size() > before ? Pushes::kSome : Pushes::kNone;
}

const OutputLimit& RespSession::output_limit() const {
  return subs_.active() ? svc_.settings.output_limits.pubsub : svc_.settings.output_limits.normal;
}

int64_t RespSession::held_bytes() const {
  const Subscriber* sub = subs_.subscriber();
  int64_t held = 0;  // (replies held for a waiting take or an FG.TAKEALL)
  for (const HeldPart& p : held_) held += static_cast<int64_t>(p.bytes.capacity());
  return held + queued_bytes_ + watched_bytes_ + subs_.held_bytes() +
         (sub ? static_cast<int64_t>(sub->waiting_bytes()) : 0);
}

bool RespSession::queued_cross_slot() const {
  int slot = -1;
  auto same = [&](std::string_view key) {
    const int s = static_cast<int>(key_slot(key));
    if (slot >= 0 && s != slot) return false;
    slot = s;
    return true;
  };
  // (watched keys too: their checks must run in the same turn of the same shard)
  for (const Watched& w : watched_)
    if (!same(w.key)) return true;
  for (const auto& words : queued_) {
    const CommandSpec* spec = find_command(words[0]);
    if (!spec) continue;
    bool crosses = false;
    spec->for_each_key(words, [&](size_t j) { crosses = crosses || !same(words[j]); });
    if (crosses) return true;
  }
  return false;
}

// EXEC: the queued commands run one after the other in this read, each as it would alone,
// so every keyed one joins the same flight, in order: the ops of one shard run back to back
// in one turn of it, nothing of anyone else's between them.
void RespSession::exec() {
  if (!in_multi_) return local().error(err::kExecWithoutMulti);
  const bool dirty = multi_dirty_;
  in_multi_ = multi_dirty_ = false;
  if (dirty) {
    queued_.clear();
    queued_bytes_ = 0;
    release_watches();
    return local().error(err::kExecAbort);
  }
  if (routing_ && queued_cross_slot()) {
    queued_.clear();
    queued_bytes_ = 0;
    release_watches();
    return local().error(err::kCrossSlot);
  }
  executing_ = std::move(queued_);
  queued_.clear();
  queued_bytes_ = 0;
  const uint16_t exec_cmd = cur_cmd_;
  const size_t first_op = flight_->batch->ops.size();
  // Watched keys first: each one's check runs before the queued commands, in the same
  // turn of its shard (or step); one that finds its key changed aborts the rest.
  if (!watched_.empty()) txn_ = flight_->open_txn();
  for (const Watched& w : watched_) {
    Request r = watch_op(DataCmd::kWatchCheck, {"exec", w.key, std::to_string(w.token)});
    request_as(r, Slot::Type::kCheck);
  }
  watched_.clear();  // (the checks let go of them)
  watched_bytes_ = 0;
  size_t start = local_.size();
  local().array(executing_.size());
  end_local_slot(start);
  slots_.back().type = Slot::Type::kExec;
  slots_.back().aux = static_cast<uint32_t>(executing_.size());
  running_exec_ = true;
  for (const auto& words : executing_) {
    exec_args_.assign(words.begin(), words.end());
    const CommandSpec* spec = find_command(exec_args_[0]);
    cur_cmd_ = command_id(spec);
    start = local_.size();
    requested_ = false;
    client_->last_cmd.store(spec->name, std::memory_order_relaxed);
    // (rights are checked again: the user's may have changed since it was queued)
    if (!acl_refuses(*spec, exec_args_, "multi")) run_command(*spec, *this, exec_args_);
    if (!requested_) end_local_slot(start);
  }
  running_exec_ = false;
  flight_->atomic_from(first_op);  // (keys on several shards, standalone: one step)
  txn_ = 0;
  cur_cmd_ = exec_cmd;
  requested_ = true;  // (every reply has its slot already)
}

void RespSession::complete(Flight& flight) {
  if (door_.reply_room && reply_room_.load(std::memory_order_relaxed) < 0) {
    evicted_ = true;  // (its replies are not written: the connection closes)
    slots_.clear();
    return;
  }
  RespWriter w(out_, proto_);
  Door& d = door_;
  const int64_t took_ns = steady_ns() - arrived_ns_;
  d.latency_us = took_ns / 1000;
  if (scripts_ > 0 && svc_.scripts) {
    // (what the batch took is an upper bound on what its scripts took: the allowance errs
    // on the side of fewer)
    const int64_t budget_ns = svc_.scripts->limits().budget_ms * 1'000'000;
    const int64_t each_ns = std::max<int64_t>(took_ns / static_cast<int64_t>(scripts_), 1000);
    script_allowance_ = static_cast<size_t>(std::clamp<int64_t>(
        budget_ns / each_ns, 1, static_cast<int64_t>(svc_.settings.max_batch_commands)));
  }
  RequestMetrics& metrics = *svc_.metrics;
  uint32_t drop = 0;            // replies of an aborted transaction still to pass over
  size_t hold_from = SIZE_MAX;  // where the held replies start (a waiting take's), if any
  std::vector<Waiter> refused;  // waiting takes with no place to wait: given back
  bool failed_check = false;    // a check of the next EXEC failed
  // (a silent slot's reply is written, then cut off again: one path for every kind of slot)
  // Each reply that is an error is counted (INFO errorstats), silent or not, as Redis does.
  struct Cut {
    std::string& out;
    size_t at;
    bool on;
    ErrorStats& errors;
    ~Cut() {
      if (out.size() > at && out[at] == '-') errors.count(std::string_view(out).substr(at));
      if (on) out.resize(at);
    }
  };
  for (const Slot& s : slots_) {
    Cut cut{out_, out_.size(), s.silent, svc_.errors};
    if (drop > 0) {
      --drop;
      continue;
    }
    switch (s.type) {
      case Slot::Type::kLocal:
        out_.append(local_, s.start, s.len);
        if (!s.counted) {
          metrics.record(s.cmd, local_[s.start] == '-' ? RequestResult::kError : RequestResult::kOk,
                         d.latency_us);
        }
        continue;
      case Slot::Type::kExec:
        if (failed_check) {  // a watched key changed: nothing ran, and EXEC says so
          failed_check = false;
          w.null_array();
          drop = s.aux;
        } else {
          out_.append(local_, s.start, s.len);
        }
        metrics.record(s.cmd, RequestResult::kOk, d.latency_us);
        continue;
      case Slot::Type::kHidden:
        continue;
      case Slot::Type::kLate: {
        for (uint32_t k = 0; k < s.aux; ++k) out_.append(local_, s.start, s.len);
        metrics.record(s.cmd, RequestResult::kError, d.latency_us, s.aux);
        // (the Cut counts the first)
        svc_.errors.count(std::string_view(local_).substr(s.start, s.len), s.aux - 1);
        continue;
      }
      case Slot::Type::kTakeAll: {
        std::shared_ptr<TakeAllWait>& st = take_alls_[s.aux];
        if (s.silent) continue;  // (its rounds run all the same; nobody waits for the reply)
        if (hold_from == SIZE_MAX && st->ready.load(std::memory_order_acquire)) {
          write_take_all(w, st->result);
          metrics.record(s.cmd, RequestResult::kOk, d.latency_us);
          continue;
        }
        // Not done yet: it and what follows wait for it, in order.
        if (hold_from == SIZE_MAX) hold_from = out_.size();
        held_.push_back(HeldPart{out_.substr(hold_from), nullptr});
        out_.resize(hold_from);
        held_.push_back(HeldPart{{}, st});
        metrics.record(s.cmd, RequestResult::kOk, d.latency_us);
        continue;
      }
      default:
        break;
    }
    if (s.type == Slot::Type::kCheck && s.aux == 1) {
      failed_check = true;
      continue;
    }
    Outcome o;
    if (s.type == Slot::Type::kBlock) {
      // (a blocking command is one call however often it is tried: counted once answered)
      Door quiet = d;
      quiet.count = false;
      core_.finish(s.pending, flight, quiet, o);
    } else {
      core_.finish(s.pending, flight, d, o);
    }
    if (s.type == Slot::Type::kBlock) {
      using T = ReplyItem::Type;
      // (a later attempt that finds a key of another type keeps waiting, as Redis serves a
      // blocked client only from a key that is still a list or sorted set — unless it is
      // BRPOPLPUSH's or BLMOVE's destination, which Redis answers with the error)
      const bool moves = block_.data == DataCmd::kBRPopLPush || block_.data == DataCmd::kBLMove;
      const bool nothing =
          (o.ok() && o.reply && !o.reply->items.empty() &&
           (o.reply->items[0].type == T::kNullArray || o.reply->items[0].type == T::kNull)) ||
          (blocked_ && !moves && !o.ok() && o.error.rfind("WRONGTYPE", 0) == 0);
      if (!nothing || block_.ticket == 0) {  // (answered, or not waiting: tried once)
        if (d.count)
          metrics.record(s.cmd, o.ok() ? RequestResult::kOk : RequestResult::kError, d.latency_us);
        write_outcome(w, o, s.style);
        if (!nothing) end_block();
      } else {
        blocked_ = true;  // (its reply comes with a later attempt, or at its timeout)
        next_try_ns_ = steady_ns() + kBlockPollNs;
        if (block_.data == DataCmd::kXRead && o.ok() && o.reply) take_stream_ids(*o.reply);
      }
      continue;
    }
    if (s.type == Slot::Type::kCheck) {
      // (1: unchanged; 0, or no answer from the key's owner: the transaction does not run)
      if (!o.ok() || !o.reply || o.reply->items.empty() || o.reply->items[0].n != 1) {
        failed_check = true;
      }
    } else if (s.type == Slot::Type::kWatch) {
      if (!o.ok()) {
        write_outcome(w, o, s.style);
      } else {
        // (a token per key: one integer, or an array of them)
        const auto& keys = watching_[s.aux];
        size_t k = 0;
        for (const ReplyItem& i : o.reply->items) {
          if (i.type == ReplyItem::Type::kInt && k < keys.size()) {
            // (held twice: here, and in its shard's table of watched keys)
            watched_bytes_ += 2 * (static_cast<int64_t>(keys[k].size()) + kWatchedBytes);
            watched_.push_back(Watched{keys[k++], i.n});
          }
        }
        w.ok();
      }
    } else if (s.aux != 0 && o.ok() && o.decision.wait_ns > 0) {
      // A take admitted when it is due: from its reply on, the replies wait for it.
      Waiter& wt = wait_takes_[s.aux - 1];
      if (svc_.wait_room.enter(wt.key, acl_.account())) {
        if (hold_from == SIZE_MAX) hold_from = out_.size();
        held_due_ns_ = std::max(held_due_ns_, steady_ns() + o.decision.wait_ns);
        held_waiters_.push_back(std::move(wt));
        write_outcome(w, o, s.style);
      } else {
        refused.push_back(std::move(wt));
        w.error(err::kTooManyWaiters);
      }
    } else {
      write_outcome(w, o, s.style);
    }
  }
  if (hold_from != SIZE_MAX) {
    held_.push_back(HeldPart{out_.substr(hold_from), nullptr});
    out_.resize(hold_from);
  }
  if (!refused.empty()) give_back_waits(svc_, std::move(refused));
  wait_takes_.clear();
  take_alls_.clear();
  watch_pending_ = false;
  slots_.clear();
  local_.clear();
  if (svc_.slowlog.slow(took_ns / 1000) && !batch_in_.empty()) log_slow(took_ns / 1000);
  batch_in_ = {};
}

// The commands of a batch that took `us` from its read to its replies, into the slow log:
// read again from the batch's bytes (still in the input buffer until the replies are out),
// so a fast batch pays nothing for it.
void RespSession::log_slow(int64_t us) {
  const int64_t unix_ms = svc_.clock->now_ns() / 1'000'000;
  if (!svc_.slowlog.room(unix_ms)) return;
  RespParser parser(svc_.settings.parser);
  std::vector<std::string_view> words;
  std::deque<std::string> arena;
  const std::string name = svc_.clients->name_of(*client_);
  size_t at = 0;
  while (at < batch_in_.size()) {
    const ParseResult pr = parser.parse(batch_in_.data() + at, batch_in_.size() - at, words, arena);
    if (pr.status != ParseStatus::kCommand || pr.consumed == 0) break;
    at += pr.consumed;
    // (as Redis: only the commands that ran — known, with the words their arity allows)
    const CommandSpec* spec = words.empty() ? nullptr : find_command(words[0]);
    const auto n = static_cast<int64_t>(words.size());
    if (spec && (spec->arity > 0 ? n == spec->arity : n >= -spec->arity) &&
        slowlog_words(spec->name, words)) {
      svc_.slowlog.add(words, us, unix_ms, client_->addr, name);
    }
  }
}

}  // namespace fg
