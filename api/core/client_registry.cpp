// Connection bookkeeping and the CLIENT LIST line format.
#include "client_registry.hpp"

namespace fg {

std::shared_ptr<ClientInfo> ClientRegistry::add(std::string addr, std::string laddr,
                                                int64_t now_ms) {
  std::lock_guard<std::mutex> g(mu_);
  if (clients_.size() >= max_clients_) {
    rejected_.fetch_add(1);
    return nullptr;
  }
  auto c = std::make_shared<ClientInfo>();
  c->id = next_id_.fetch_add(1);
  c->addr = std::move(addr);
  c->laddr = std::move(laddr);
  c->created_ms = now_ms;
  c->last_active_ms = now_ms;
  clients_[c->id] = c;
  return c;
}

void ClientRegistry::remove(uint64_t id) {
  std::lock_guard<std::mutex> g(mu_);
  clients_.erase(id);
}

void ClientRegistry::set_name(ClientInfo& c, std::string name) {
  std::lock_guard<std::mutex> g(mu_);
  c.name = std::move(name);
}

void ClientRegistry::set_lib(ClientInfo& c, bool is_name, std::string v) {
  std::lock_guard<std::mutex> g(mu_);
  (is_name ? c.lib_name : c.lib_ver) = std::move(v);
}

std::string ClientRegistry::name_of(const ClientInfo& c) const {
  std::lock_guard<std::mutex> g(mu_);
  return c.name;
}

size_t ClientRegistry::count() const {
  std::lock_guard<std::mutex> g(mu_);
  return clients_.size();
}

std::string ClientRegistry::describe_locked(const ClientInfo& c, int64_t now_ms) const {
  std::string s = "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr +
                  " name=" + c.name + " age=" + std::to_string((now_ms - c.created_ms) / 1000) +
                  " idle=" + std::to_string((now_ms - c.last_active_ms.load()) / 1000) +
                  " flags=N db=0 resp=" + std::to_string(c.proto.load()) +
                  " cmd=" + c.last_cmd.load() + " lib-name=" + c.lib_name + " lib-ver=" + c.lib_ver;
  for (char& ch : s)
    if (ch == '\r' || ch == '\n') ch = ' ';
  return s;
}

std::string ClientRegistry::describe(const ClientInfo& c, int64_t now_ms) const {
  std::lock_guard<std::mutex> g(mu_);
  return describe_locked(c, now_ms);
}

std::string ClientRegistry::list(int64_t now_ms) const {
  std::lock_guard<std::mutex> g(mu_);
  std::string out;
  for (const auto& [id, c] : clients_) {
    out += describe_locked(*c, now_ms);
    out += '\n';
  }
  return out;
}

}  // namespace fg
