// floodgate::Holder: an application server's leases under one name, renewed in the background.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "floodgate/client.hpp"

namespace floodgate {

struct Holder::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  std::atomic<uint64_t> failed{0};
};

Holder::Holder(Client& client, std::string holder_id, std::chrono::milliseconds ttl)
    : client_(client), id_(std::move(holder_id)), state_(std::make_shared<State>()) {
  const auto every = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(10), ttl / 3);
  const int64_t ttl_ms = ttl.count();
  state_->thread = std::thread([this, every, ttl_ms, st = state_] {
    std::unique_lock<std::mutex> lock(st->mu);
    while (!st->cv.wait_for(lock, every, [&] { return st->stop; })) {
      lock.unlock();
      if (!client_.heartbeat(id_, ttl_ms).ok()) st->failed.fetch_add(1);
      lock.lock();
    }
  });
}

Holder::~Holder() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  client_.release_all(id_);
}

uint64_t Holder::failed_heartbeats() const { return state_->failed.load(); }

Result<Lease> Holder::acquire(std::string_view key, const Limit& limit) {
  return client_.acquire(key, limit, id_);
}
void Holder::acquire(std::string_view key, const Limit& limit, Callback<Lease> cb) {
  client_.acquire(key, limit, id_, std::move(cb));
}
Result<bool> Holder::release(const Lease& lease) { return client_.release(lease.key, lease.id); }
void Holder::release(const Lease& lease, Callback<bool> cb) {
  client_.release(lease.key, lease.id, std::move(cb));
}

}  // namespace floodgate
