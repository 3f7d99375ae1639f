// The timers of a node. In a process, an Asio timer on the monotonic clock. In the
// simulator (tests/sim) time is virtual: it moves only when the simulator moves it, and a
// wait is kept in one queue of the process instead of in Asio's reactor, so the simulator
// knows the next deadline, jumps to it, and hands the due waits to their event loops in
// one fixed order (node/README.md, "The simulator").
#pragma once
#include <asio/any_io_executor.hpp>
#include <asio/basic_waitable_timer.hpp>
#include <asio/error.hpp>
#include <asio/execution_context.hpp>
#include <asio/post.hpp>
#include <asio/query.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace fg {

struct TimerClock {
  using rep = int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<TimerClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

namespace detail {
extern std::atomic<bool> g_virtual_time;
extern std::atomic<int64_t> g_virtual_now_ns;

struct VirtualWait {  // one async_wait in virtual time
  virtual ~VirtualWait() = default;
  virtual void post(const asio::error_code& ec) = 0;  // to the timer's event loop
};
template <class Handler>
struct VirtualWaitOf final : VirtualWait {
  VirtualWaitOf(asio::any_io_executor ex, Handler h) : ex(std::move(ex)), h(std::move(h)) {}
  void post(const asio::error_code& ec) override {
    asio::post(ex, [h = std::move(h), ec]() mutable { h(ec); });
  }
  asio::any_io_executor ex;
  Handler h;
};

// Ends an event loop's virtual waits with the loop, as Asio's reactor does with its own:
// their handlers are destroyed, not run.
class VirtualTimerService final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit VirtualTimerService(asio::execution_context& ctx)
      : asio::execution_context::service(ctx) {}
  void shutdown() override;
};
}  // namespace detail

// Process-wide virtual time (off: the monotonic clock). Only a simulator turns it on,
// before any timer exists, and drives every timer from one thread.
namespace virtual_time {
void enable(int64_t start_ns);  // (again: starts over at start_ns, no wait kept)
bool enabled();
int64_t now_ns();
void set_ns(int64_t t);
// The earliest deadline of a wait; false if none.
bool next_deadline(int64_t& t);
// Hands every wait due by now to its event loop, earliest first; how many.
size_t fire_due();
// (SteadyTimer's side.)
uint64_t new_timer_id();
void wait(uint64_t timer, const void* loop, int64_t deadline_ns,
          std::unique_ptr<detail::VirtualWait> w);
void drop_loop(const void* loop);  // its waits go, unrun
size_t cancel(uint64_t timer);     // its waits end with operation_aborted
}  // namespace virtual_time

inline TimerClock::time_point TimerClock::now() noexcept {
  if (detail::g_virtual_time.load(std::memory_order_relaxed)) {
    return time_point(duration(detail::g_virtual_now_ns.load(std::memory_order_relaxed)));
  }
  return time_point(
      std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

// asio::steady_timer's interface (as far as the node uses it), on TimerClock.
class SteadyTimer {
  using Base = asio::basic_waitable_timer<TimerClock>;

 public:
  using clock_type = TimerClock;
  using duration = TimerClock::duration;
  using time_point = TimerClock::time_point;
  using executor_type = asio::any_io_executor;

  // `ctx`: an io_context or an executor. (In virtual time no Asio timer is made, so a loop
  // with no socket never enters its reactor: polling it costs no system call.)
  template <class Ctx>
  explicit SteadyTimer(Ctx&& ctx) : ex_(executor_of(ctx)) {
    if (!virtual_on()) timer_.emplace(ex_);
  }
  template <class Ctx>
  SteadyTimer(Ctx&& ctx, const duration& d) : SteadyTimer(std::forward<Ctx>(ctx)) {
    expires_after(d);
  }
  template <class Ctx>
  SteadyTimer(Ctx&& ctx, const time_point& t) : SteadyTimer(std::forward<Ctx>(ctx)) {
    expires_at(t);
  }
  ~SteadyTimer() {
    if (id_) virtual_time::cancel(id_);
  }
  SteadyTimer(const SteadyTimer&) = delete;
  SteadyTimer& operator=(const SteadyTimer&) = delete;

  executor_type get_executor() { return ex_; }
  time_point expiry() const { return timer_ ? timer_->expiry() : expiry_; }
  std::size_t expires_after(const duration& d) { return expires_at(TimerClock::now() + d); }
  std::size_t expires_at(const time_point& t) {
    if (timer_) return timer_->expires_at(t);
    const std::size_t n = cancel();
    expiry_ = t;
    return n;
  }
  std::size_t cancel() {
    if (timer_) return timer_->cancel();
    return id_ ? virtual_time::cancel(id_) : 0;
  }
  template <class Handler>
  void async_wait(Handler&& h) {
    if (timer_) {
      timer_->async_wait(std::forward<Handler>(h));
      return;
    }
    if (!id_) id_ = virtual_time::new_timer_id();
    auto& loop = asio::query(ex_, asio::execution::context);
    asio::use_service<detail::VirtualTimerService>(loop);
    virtual_time::wait(id_, &loop, expiry_.time_since_epoch().count(),
                       std::make_unique<detail::VirtualWaitOf<std::decay_t<Handler>>>(
                           ex_, std::forward<Handler>(h)));
  }

 private:
  static bool virtual_on() { return detail::g_virtual_time.load(std::memory_order_relaxed); }
  template <class Ctx>
  static asio::any_io_executor executor_of(Ctx& ctx) {
    if constexpr (std::is_base_of_v<asio::execution_context, std::decay_t<Ctx>>) {
      return ctx.get_executor();
    } else {
      return asio::any_io_executor(ctx);
    }
  }

  asio::any_io_executor ex_;
  std::optional<Base> timer_;  // in a process; none in virtual time
  time_point expiry_{};        // (virtual time)
  uint64_t id_ = 0;            // (virtual time) 0: never waited
};

}  // namespace fg
