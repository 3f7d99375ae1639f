// Every open RESP connection of the node, for CLIENT LIST / CLIENT INFO, INFO and
// --maxclients. Touched on connect, disconnect and name changes, never per command.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace fg {

struct ClientInfo {
  uint64_t id = 0;
  std::string addr;
  std::string laddr;
  int64_t created_ms = 0;
  std::atomic<int64_t> last_active_ms{0};
  std::atomic<const char*> last_cmd{"NULL"};
  std::atomic<int> proto{2};
  // Guarded by the registry's mutex.
  std::string name;
  std::string lib_name;
  std::string lib_ver;
};

class ClientRegistry {
 public:
  explicit ClientRegistry(size_t max_clients) : max_clients_(max_clients) {}

  // Null when the node already has max_clients connections.
  std::shared_ptr<ClientInfo> add(std::string addr, std::string laddr, int64_t now_ms);
  void remove(uint64_t id);
  // What a client name, lib-name or lib-ver may hold (Redis's rule: printable ASCII, no
  // spaces), so that each client stays one CLIENT LIST line.
  static bool valid_name(std::string_view n) {
    for (char c : n)
      if (c < '!' || c > '~') return false;
    return true;
  }
  void set_name(ClientInfo& c, std::string name);
  void set_lib(ClientInfo& c, bool is_name, std::string v);
  std::string name_of(const ClientInfo& c) const;
  std::string describe(const ClientInfo& c, int64_t now_ms) const;  // one CLIENT LIST line
  std::string list(int64_t now_ms) const;
  size_t count() const;
  size_t max_clients() const { return max_clients_; }
  uint64_t total_accepted() const { return next_id_.load() - 1; }
  uint64_t rejected() const { return rejected_.load(); }

 private:
  std::string describe_locked(const ClientInfo& c, int64_t now_ms) const;

  size_t max_clients_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<ClientInfo>> clients_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace fg
