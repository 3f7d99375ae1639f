// A client connection's registration, memory account and deadlines.
#include "client_socket.hpp"

#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>

#include "lease_upkeep.hpp"
#include "services.hpp"
#include "timer.hpp"

namespace fg {

const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c,
                            ConnectionState s, int64_t now, NodeCounters& counters) {
  if (s.writing &&
      now - c.write_since_ms > limits.output_timeout_ms.load(std::memory_order_relaxed)) {
    counters.dropped_slow.fetch_add(1, std::memory_order_relaxed);
    return "not reading its replies";
  }
  if (!s.waiting_for_input) return nullptr;
  if (c.partial_since_ms != 0 &&
      now - c.partial_since_ms > limits.query_deadline_ms.load(std::memory_order_relaxed)) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "request not completed within the query deadline";
  }
  const int64_t idle_s = limits.timeout_s.load(std::memory_order_relaxed);
  if (idle_s > 0 && s.input_empty && !s.subscribed && now - c.last_read_ms > idle_s * 1000) {
    counters.dropped_timeout.fetch_add(1, std::memory_order_relaxed);
    return "";
  }
  return nullptr;
}

std::shared_ptr<ClientInfo> register_client(ClientStream& stream, Services& svc, const char* door) {
  return svc.clients->add(stream.peer(), stream.local(), svc.clock->now_ns() / 1'000'000, door);
}

void unregister_client(Services& svc, const std::shared_ptr<ClientInfo>& client) {
  if (!client) return;
  svc.clients->remove(client->id);
  release_bound_leases(svc, client->id);
}

int64_t connection_now_ms() {
  if (virtual_time::enabled()) return virtual_time::now_ns() / 1'000'000;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

bool account_memory(Services& svc, ClientInfo& client, int64_t bytes, int64_t& reported,
                    int64_t now_ms) {
  if (bytes != reported) {
    reported = bytes;
    svc.clients->track(client, bytes, now_ms);
  }
  if (!client.evict.load(std::memory_order_relaxed)) return true;
  spdlog::info(
      "client {} evicted: its buffers hold {} bytes and all clients' are over "
      "maxmemory-clients ({} bytes)",
      client.addr, bytes, svc.clients->max_memory());
  return false;
}

}  // namespace fg
