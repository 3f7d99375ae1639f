// The client's machinery, all on one I/O thread: calls are routed by the topology cache to
// their owner's connection pool, retried (with backoff, through another node when the owner
// cannot be reached) until their deadline, and answered by order on each connection.
#pragma once
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "call.hpp"
#include "topology_cache.hpp"

namespace floodgate {

class Connection;

class Client::Impl {
 public:
  explicit Impl(Options o);
  ~Impl();

  bool on_io_thread() const { return std::this_thread::get_id() == thread_id_; }
  CallPtr make(const Req& r);
  CallPtr make(const Req& r, Done done);
  // From any thread.
  void submit(CallPtr c);
  void get_topology(Callback<Topology> cb);
  Client::Stats stats() const;

  const Options& options() const { return opt_; }
  asio::io_context& io() { return io_; }
  // The TLS context connections use (null: plain TCP).
  asio::ssl::context* tls() { return tls_.get(); }

  // --- from connections, on the I/O thread ---
  void finish(const CallPtr& c, Status s, const std::string& error, const fg::wire::ResultView* r);
  // Answers from a connection, in order.
  void on_result(CallPtr c, const fg::wire::ResultView& r);
  // A connection broke: `sent` calls went out (and may have been counted), `unsent` did not.
  void on_broken(const std::string& addr, std::vector<CallPtr> sent, std::vector<CallPtr> unsent,
                 const std::string& why);
  // A frame came from `addr`: it is reachable.
  void on_alive(const std::string& addr) { topo_.mark_up(addr); }
  void on_topology(const pb::Topology& t, const std::string& from);
  void count_frame() { frames_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void dispatch(CallPtr c);
  // Tries again later, or, once the deadline would pass, ends the call: kTimeout if an attempt
  // may have been counted, else kUnavailable, with the most telling reason seen.
  void retry_later(CallPtr c, const std::string& why, bool from_node);
  void refresh();
  void fail_waiting(Status s, const std::string& e);
  void arm_tick();
  void on_tick();
  Connection& pool(const std::string& addr);
  std::vector<std::shared_ptr<Connection>>& pool_of(const std::string& addr);
  void send_node(size_t index, CallPtr c);

  Options opt_;
  std::unique_ptr<asio::ssl::context> tls_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  asio::steady_timer tick_;
  bool tick_armed_ = false;
  std::thread thread_;
  std::thread::id thread_id_;

  std::mutex mu_;
  std::vector<CallPtr> incoming_;
  bool wake_posted_ = false;

  TopologyCache topo_;
  std::atomic<bool> cluster_{true};  // skip the CRC of keys until a cluster is seen
  std::map<std::string, std::vector<std::shared_ptr<Connection>>> conns_;
  std::map<std::string, size_t> rr_;
  std::vector<std::vector<std::shared_ptr<Connection>>*> node_pools_;  // by topology index
  std::vector<size_t> node_rr_;
  std::vector<CallPtr> waiting_;  // for a first topology
  std::multimap<Clock::time_point, CallPtr> retry_;
  std::vector<std::pair<Clock::time_point, Callback<Topology>>> topology_waiting_;
  bool refreshing_ = false, refresh_wanted_ = false;
  Clock::time_point last_refresh_{};
  size_t refresh_rr_ = 0;
  std::string last_error_;
  std::atomic<uint64_t> requests_{0}, frames_{0}, retries_{0}, redirects_{0}, reconnects_{0};
};

}  // namespace floodgate
