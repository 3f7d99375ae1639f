// What every client connection does, RESP and native alike, besides moving bytes:
// registering and unregistering the client, its memory account, and the defences — a client
// that does not read its replies, one that leaves a request half-sent, and a silent idler
// are dropped (each connection keeps a ConnectionClock and, on its ticks, asks
// deadline_breach()).
#pragma once
#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "client_registry.hpp"
#include "client_stream.hpp"

namespace fg {

struct Services;
struct NodeCounters;

// What each connection may take. One set for every connection of a node: the durations
// change at runtime (CONFIG SET) and are read where they are used.
struct ConnectionLimits {
  size_t max_query_bytes = 8 << 20;
  std::atomic<int64_t> query_deadline_ms{30000};
  std::atomic<int64_t> output_timeout_ms{30000};
  std::atomic<int64_t> timeout_s{0};
};

// When things last happened on a connection.
struct ConnectionClock {
  int64_t last_read_ms = 0;
  int64_t write_since_ms = 0;    // when the replies being written started
  int64_t partial_since_ms = 0;  // 0: no half-received request buffered
  // After the door took every whole request: what is left is half of one (or nothing).
  void input_left(bool empty, int64_t now_ms) {
    if (empty) {
      partial_since_ms = 0;
    } else if (partial_since_ms == 0) {
      partial_since_ms = now_ms;
    }
  }
};

// The clock of ConnectionClock: monotonic milliseconds from the kernel's coarse clock (a
// few ms of resolution, no hardware read), read several times per request; the deadlines
// it serves are seconds long.
int64_t connection_now_ms();

// What the connection is doing right now.
struct ConnectionState {
  bool writing = false;            // replies are being written
  bool waiting_for_input = false;  // nothing written or in flight: the client's turn
  bool input_empty = true;
  bool subscribed = false;  // pub/sub: silent by design, so never an idler (Redis's rule)
};

// Null if the client may stay; otherwise why it is dropped ("" for a plain idle timeout,
// which is not logged). Counts the drop.
const char* deadline_breach(const ConnectionLimits& limits, const ConnectionClock& c,
                            ConnectionState s, int64_t now_ms, NodeCounters& counters);

// A new client connection's place in the client registry (CLIENT LIST, --maxclients); null
// when the node already has maxclients.
std::shared_ptr<ClientInfo> register_client(ClientStream& stream, Services& svc, const char* door);
// The connection is gone: out of the registry, and every lease it took with BOUND goes back,
// wherever its key lives.
void unregister_client(Services& svc, const std::shared_ptr<ClientInfo>& client);
// Reports the bytes a connection's buffers hold (`*reported`: what it said last) for
// maxmemory-clients; false when the client is to be evicted (logged and counted here: the
// caller closes the connection).
bool account_memory(Services& svc, ClientInfo& client, int64_t bytes, int64_t& reported,
                    int64_t now_ms);
}  // namespace fg
