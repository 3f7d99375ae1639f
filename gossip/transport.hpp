// Unreliable datagrams between gossip addresses: the only way membership talks to peers.
// Real nodes use UDP (udp_transport); tests use MemoryNetwork, which loses, delays and
// partitions on purpose, all under a simulated clock.
#pragma once
#include <string>
#include <string_view>

namespace fg {

class Transport {
 public:
  virtual ~Transport() = default;
  // Best effort: may be lost, duplicated or reordered. Never blocks.
  virtual void send(const std::string& to_addr, std::string_view bytes) = 0;
};

}  // namespace fg
