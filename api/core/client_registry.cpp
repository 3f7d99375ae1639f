// Connection bookkeeping and the CLIENT LIST line format.
#include "client_registry.hpp"

#include <algorithm>
#include <vector>

#include "request_metrics.hpp"  // steady_ns
#include "words.hpp"

namespace fg {

std::shared_ptr<ClientInfo> ClientRegistry::add(std::string addr, std::string laddr, int64_t now_ms,
                                                const char* door) {
  std::lock_guard<std::mutex> g(mu_);
  if (clients_.size() >= max_clients()) {
    rejected_.fetch_add(1);
    return nullptr;
  }
  auto c = std::make_shared<ClientInfo>();
  c->id = next_id_.fetch_add(1);
  c->door = door;
  c->addr = std::move(addr);
  c->laddr = std::move(laddr);
  c->created_ms = now_ms;
  c->last_active_mono_ms = steady_ns() / 1'000'000;
  if (accounts_) accounts_->add(c->account, Accounts::kConnections, 1);  // (no one's, yet)
  clients_[c->id] = c;
  return c;
}

std::shared_ptr<ClientInfo> ClientRegistry::find(uint64_t id) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : it->second;
}

void ClientRegistry::remove(uint64_t id) {
  std::lock_guard<std::mutex> g(mu_);
  const auto it = clients_.find(id);
  if (it == clients_.end()) return;
  it->second->gone.store(true, std::memory_order_relaxed);  // (grow() counts nothing more)
  memory_.fetch_sub(it->second->mem_bytes.exchange(0), std::memory_order_relaxed);
  if (accounts_) accounts_->add(it->second->account, Accounts::kConnections, -1);
  clients_.erase(it);
}

void ClientRegistry::track(ClientInfo& c, int64_t bytes, int64_t now_ms) {
  const int64_t grew = bytes - c.mem_bytes.exchange(bytes, std::memory_order_relaxed);
  const int64_t total = memory_.fetch_add(grew, std::memory_order_relaxed) + grew;
  if (grew > 0) over_cap(c, total, now_ms, false);
}

bool ClientRegistry::grow(ClientInfo& c, int64_t bytes, int64_t now_ms) {
  // A client already removed counts nothing (a message may reach a subscriber's mailbox
  // after its connection closed, before its subscriptions are let go): what it counted is
  // taken back, whichever of this and remove() came first.
  if (c.gone.load(std::memory_order_relaxed)) return false;
  c.mem_bytes.fetch_add(bytes, std::memory_order_relaxed);
  const int64_t total = memory_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (c.gone.load(std::memory_order_relaxed)) {
    memory_.fetch_sub(c.mem_bytes.exchange(0), std::memory_order_relaxed);
    return false;
  }
  if (bytes > 0) over_cap(c, total, now_ms, true);
  return !c.evict.load(std::memory_order_relaxed);
}

void ClientRegistry::over_cap(ClientInfo& c, int64_t total, int64_t now_ms, bool pushed) {
  const int64_t cap = max_memory();
  if (cap <= 0 || total <= cap) return;
  // (only what is pushed to a client — a message it did not ask for — makes it go for the
  // margin's sake: a client reading its own command is not to blame for the others' replies)
  if (pushed && total > cap + memory_margin(cap) && !c.no_evict.load(std::memory_order_relaxed) &&
      !c.evict.exchange(true, std::memory_order_relaxed)) {
    // (past the margin the growing client goes at once: the pass below frees the biggest,
    // but their connections let go of their buffers only when they next run)
    evicted_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(mu_);
    if (c.wake) c.wake();
  }
  int64_t last = last_pass_ms_.load(std::memory_order_relaxed);
  if (now_ms - last < 100 || !last_pass_ms_.compare_exchange_strong(last, now_ms)) return;
  evict_biggest();
}

void ClientRegistry::set_max_memory(int64_t bytes) {
  max_memory_.store(bytes, std::memory_order_relaxed);
  if (bytes > 0 && memory() > bytes) evict_biggest();
}

void ClientRegistry::evict_biggest() {
  std::vector<std::pair<int64_t, ClientInfo*>> by_size;
  std::lock_guard<std::mutex> g(mu_);
  int64_t over = memory_.load(std::memory_order_relaxed) - max_memory();
  by_size.reserve(clients_.size());
  for (const auto& [id, c] : clients_) {
    if (c->evict.load(std::memory_order_relaxed)) {
      over -= c->mem_bytes.load(std::memory_order_relaxed);  // going already
    } else if (!c->no_evict.load(std::memory_order_relaxed)) {
      by_size.emplace_back(c->mem_bytes.load(std::memory_order_relaxed), c.get());
    }
  }
  std::sort(by_size.begin(), by_size.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [bytes, c] : by_size) {
    if (over <= 0) break;
    c->evict.store(true, std::memory_order_relaxed);
    evicted_.fetch_add(1, std::memory_order_relaxed);
    if (c->wake) c->wake();
    over -= bytes;
  }
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

size_t ClientRegistry::count_on_port(int port) const {
  const std::string tail = ":" + std::to_string(port);
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (const auto& [id, c] : clients_) {
    n += c->laddr.size() > tail.size() &&
         c->laddr.compare(c->laddr.size() - tail.size(), tail.size(), tail) == 0;
  }
  return n;
}

namespace {

// Whether it hears any channel, pattern or shard channel (Redis's pubsub type, flag P).
bool subscribed(const ClientInfo& c) { return c.sub.load() + c.psub.load() + c.ssub.load() > 0; }

// Redis's flag letters, in its order: P subscribed, x in MULTI, b blocked, e NO-EVICT; N none.
std::string flags_of(const ClientInfo& c) {
  std::string f;
  if (subscribed(c)) f += 'P';
  if (c.multi.load() >= 0) f += 'x';
  if (c.block_ticket.load() != 0) f += 'b';
  if (c.no_evict.load()) f += 'e';
  return f.empty() ? "N" : f;
}

}  // namespace

std::string ClientRegistry::describe_locked(const ClientInfo& c, int64_t now_ms) const {
  std::string s =
      "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr + " name=" + c.name +
      " age=" + std::to_string((now_ms - c.created_ms) / 1000) +
      " idle=" + std::to_string((steady_ns() / 1'000'000 - c.last_active_mono_ms.load()) / 1000) +
      " flags=" + flags_of(c) + " db=0 sub=" + std::to_string(c.sub.load()) +
      " psub=" + std::to_string(c.psub.load()) + " ssub=" + std::to_string(c.ssub.load()) +
      " multi=" + std::to_string(c.multi.load()) +
      " tot-mem=" + std::to_string(c.mem_bytes.load()) + " resp=" + std::to_string(c.proto.load()) +
      " cmd=" + c.last_cmd.load() + " user=" + c.user + " lib-name=" + c.lib_name +
      " lib-ver=" + c.lib_ver + " door=" + c.door;
  for (char& ch : s)
    if (ch == '\r' || ch == '\n') ch = ' ';
  return s;
}

bool ClientRegistry::set_user(ClientInfo& c, std::string user, uint16_t account) {
  std::lock_guard<std::mutex> g(mu_);
  if (accounts_ && account != c.account) {
    if (!accounts_->room(account, Accounts::kConnections)) return false;
    accounts_->add(account, Accounts::kConnections, 1);
    accounts_->add(c.account, Accounts::kConnections, -1);
  }
  c.account = account;
  c.user = std::move(user);
  return true;
}

std::string ClientRegistry::describe(const ClientInfo& c, int64_t now_ms) const {
  std::lock_guard<std::mutex> g(mu_);
  return describe_locked(c, now_ms);
}

std::string ClientRegistry::list(int64_t now_ms) const { return list(now_ms, ClientFilter{}); }

bool ClientFilter::type_named(std::string_view name, Type& out) {
  auto is = [&](std::string_view w) { return iequals(name, w); };
  if (is("normal")) {
    out = Type::kNormal;
  } else if (is("pubsub")) {
    out = Type::kPubsub;
  } else if (is("replica") || is("slave")) {
    out = Type::kReplica;
  } else if (is("master")) {
    out = Type::kMaster;
  } else {
    return false;
  }
  return true;
}

bool ClientFilter::door_named(std::string_view name, std::string& out) {
  for (const char* d : {"resp", "native", "rls"}) {
    if (iequals(name, d)) {
      out = d;
      return true;
    }
  }
  return false;
}

bool ClientRegistry::matches_locked(const ClientInfo& c, const ClientFilter& f,
                                    int64_t now_ms) const {
  if (f.id != 0 && c.id != f.id) return false;
  if (f.skip_id != 0 && c.id == f.skip_id) return false;
  if (!f.addr.empty() && c.addr != f.addr) return false;
  if (!f.laddr.empty() && c.laddr != f.laddr) return false;
  if (!f.user.empty() && c.user != f.user) return false;
  if (!f.door.empty() && f.door != c.door) return false;
  if (f.min_age_s > 0 && (now_ms - c.created_ms) / 1000 < f.min_age_s) return false;
  switch (f.type) {
    case ClientFilter::Type::kAny:
      return true;
    case ClientFilter::Type::kNormal:  // (a subscriber is Redis's pubsub type, not normal)
      return !subscribed(c);
    case ClientFilter::Type::kPubsub:
      return subscribed(c);
    case ClientFilter::Type::kReplica:  // (nodes replicate over their own links: none)
    case ClientFilter::Type::kMaster:
      return false;
  }
  return false;
}

std::string ClientRegistry::list(int64_t now_ms, const ClientFilter& f) const {
  std::lock_guard<std::mutex> g(mu_);
  std::string out;
  for (const auto& [id, c] : clients_) {
    // (one CLIENT KILL chose is gone for its askers, as in Redis, while it closes)
    if (c->killed.load(std::memory_order_relaxed) || !matches_locked(*c, f, now_ms)) continue;
    out += describe_locked(*c, now_ms);
    out += '\n';
  }
  return out;
}

size_t ClientRegistry::kill(const ClientFilter& f, int64_t now_ms) {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (auto& [id, c] : clients_) {
    if (!matches_locked(*c, f, now_ms) || c->killed.exchange(true)) continue;
    ++n;
    if (c->wake) c->wake();
  }
  return n;
}

void ClientRegistry::wake_all() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [id, c] : clients_)
    if (c->wake) c->wake();
}

}  // namespace fg
