// Pub/sub's hub, mailboxes and subscriptions.
#include "pubsub.hpp"

#include <algorithm>

#include "cluster.hpp"
#include "length_prefix.hpp"
#include "services.hpp"
#include "words.hpp"

namespace fg {

namespace {

void bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out.append(s);
  out += "\r\n";
}

// What one subscription costs its connection beyond the name: the set's node, the hub's
// entry (counted here, as Redis counts its dict entries in the client's memory).
constexpr int64_t kSubscriptionBytes = 96;

}  // namespace

void encode_message(std::string& out, std::string_view kind, const std::string_view* pattern,
                    std::string_view channel, std::string_view message) {
  out.clear();
  out += pattern ? "*4\r\n" : "*3\r\n";
  bulk(out, kind);
  if (pattern) bulk(out, *pattern);
  bulk(out, channel);
  bulk(out, message);
}

void Subscriber::deliver(std::string_view encoded) {
  bool wake = false;
  const auto n = static_cast<int64_t>(encoded.size());
  // (counted before it is kept: a client already to go takes nothing more)
  bool keep = !meter_ || meter_(n);
  int64_t given_back = keep ? 0 : n;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (overflowed_) {
      given_back = n;
      keep = false;
    } else {
      wake = inbox_.empty();
      const size_t before = inbox_.size();
      if (keep) {
        inbox_.append(encoded);
        if (proto_.load(std::memory_order_relaxed) >= 3) inbox_[before] = '>';  // (a push)
      }
      if (!keep || (hard_bytes_ > 0 &&
                    static_cast<int64_t>(inbox_.size()) + unsent_.load(std::memory_order_relaxed) >
                        hard_bytes_)) {
        // (as Redis: past the hard limit the client goes, and nothing more is kept for it;
        // so too once maxmemory-clients chose it)
        overflowed_ = true;
        given_back += static_cast<int64_t>(inbox_.size());
        inbox_.clear();
        inbox_.shrink_to_fit();
        wake = true;
      } else if (before == 0 && inbox_.capacity() > (64 << 10) && inbox_.size() < 4096) {
        inbox_.shrink_to_fit();  // (a burst left a big buffer behind)
      }
    }
  }
  if (meter_ && given_back > 0) meter_(-given_back);  // (what it no longer holds)
  if (wake && wake_) wake_();
}

bool Subscriber::take(std::string& out) {
  std::lock_guard<std::mutex> g(mu_);
  if (overflowed_) return false;
  if (out.empty()) {
    out.swap(inbox_);
  } else {
    out += inbox_;
  }
  inbox_.clear();
  return true;
}

size_t Subscriber::waiting_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return inbox_.size();
}

bool PubSubHub::subscribe(Subscriber* s, ChannelKind k, std::string_view channel) {
  std::unique_lock<std::shared_mutex> g(mu_);
  auto& m = channels_[static_cast<int>(k)];
  auto it = m.find(std::string(channel));
  if (it == m.end()) it = m.emplace(std::string(channel), std::unordered_set<Subscriber*>{}).first;
  return it->second.insert(s).second;
}

bool PubSubHub::unsubscribe(Subscriber* s, ChannelKind k, std::string_view channel) {
  std::unique_lock<std::shared_mutex> g(mu_);
  auto& m = channels_[static_cast<int>(k)];
  auto it = m.find(std::string(channel));
  if (it == m.end() || it->second.erase(s) == 0) return false;
  // (a channel nobody hears is forgotten, so that PUBSUB CHANNELS stays small)
  if (it->second.empty()) m.erase(it);
  return true;
}

bool PubSubHub::psubscribe(Subscriber* s, std::string_view pattern) {
  std::unique_lock<std::shared_mutex> g(mu_);
  auto it = patterns_.find(pattern);
  if (it == patterns_.end())
    it = patterns_.emplace(std::string(pattern), std::unordered_set<Subscriber*>{}).first;
  return it->second.insert(s).second;
}

bool PubSubHub::punsubscribe(Subscriber* s, std::string_view pattern) {
  std::unique_lock<std::shared_mutex> g(mu_);
  auto it = patterns_.find(pattern);
  if (it == patterns_.end() || it->second.erase(s) == 0) return false;
  if (it->second.empty()) patterns_.erase(it);
  return true;
}

int64_t PubSubHub::publish(ChannelKind k, std::string_view channel, std::string_view message) {
  int64_t n = 0;
  const bool shard = k == ChannelKind::kShard;
  // (encoded once per publish, not once per subscriber, into the thread's own buffer)
  thread_local std::string encoded;
  {
    std::shared_lock<std::shared_mutex> g(mu_);
    const auto& m = channels_[static_cast<int>(k)];
    if (auto it = m.find(std::string(channel)); it != m.end()) {
      encode_message(encoded, shard ? "smessage" : "message", nullptr, channel, message);
      for (Subscriber* s : it->second) s->deliver(encoded);
      n += static_cast<int64_t>(it->second.size());
    }
    if (!shard) {
      for (const auto& [pattern, subs] : patterns_) {
        if (!glob_match(pattern, channel, false)) continue;
        const std::string_view p = pattern;
        encode_message(encoded, "pmessage", &p, channel, message);
        for (Subscriber* s : subs) s->deliver(encoded);
        n += static_cast<int64_t>(subs.size());
      }
    }
  }
  if (encoded.capacity() > (1 << 20)) std::string().swap(encoded);  // (after a big one)
  delivered.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  return n;
}

int64_t PubSubHub::publish_everywhere(ChannelKind k, std::string_view channel,
                                      std::string_view message,
                                      std::shared_ptr<std::atomic<int64_t>> by) {
  if (propagate_ && !propagate_(k, channel, message, std::move(by))) {
    bus_refused.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  published.fetch_add(1, std::memory_order_relaxed);
  return publish(k, channel, message);
}

std::vector<std::string> PubSubHub::channels(ChannelKind k, const std::string_view* pattern) const {
  std::vector<std::string> out;
  std::shared_lock<std::shared_mutex> g(mu_);
  for (const auto& [c, subs] : channels_[static_cast<int>(k)]) {
    if (!pattern || glob_match(*pattern, c, false)) out.push_back(c);
  }
  return out;
}

int64_t PubSubHub::numsub(ChannelKind k, std::string_view channel) const {
  std::shared_lock<std::shared_mutex> g(mu_);
  const auto& m = channels_[static_cast<int>(k)];
  const auto it = m.find(std::string(channel));
  return it == m.end() ? 0 : static_cast<int64_t>(it->second.size());
}

int64_t PubSubHub::channel_count(ChannelKind k) const {
  std::shared_lock<std::shared_mutex> g(mu_);
  return static_cast<int64_t>(channels_[static_cast<int>(k)].size());
}

int64_t PubSubHub::numpat() const {
  std::shared_lock<std::shared_mutex> g(mu_);
  return static_cast<int64_t>(patterns_.size());
}

Subscriber& Subscriptions::ensure() {
  if (!sub_) {
    sub_ = std::make_unique<Subscriber>(wake_, hard_bytes_, meter_);
    sub_->set_proto(proto_);
  }
  return *sub_;
}

void Subscriptions::set_proto(int proto) {
  proto_ = proto;
  if (sub_) sub_->set_proto(proto);
}

void Subscriptions::counted(int64_t n) {
  hub_.subscriptions.fetch_add(n, std::memory_order_relaxed);
  if (accounts_) accounts_->add(account_, Accounts::kSubscriptions, n);
}

void Subscriptions::set_owner(Accounts* accounts, uint16_t account) {
  if (accounts == accounts_ && account == account_) return;
  const int64_t n = count() + shard_count();
  if (accounts_) accounts_->add(account_, Accounts::kSubscriptions, -n);
  accounts_ = accounts;
  account_ = account;
  if (accounts_) accounts_->add(account_, Accounts::kSubscriptions, n);
}

bool Subscriptions::room(int64_t node_cap) const {
  if (hub_.subscriptions.load(std::memory_order_relaxed) >= node_cap) return false;
  return !accounts_ || accounts_->room(account_, Accounts::kSubscriptions);
}

bool Subscriptions::subscribe(ChannelKind k, std::string_view channel) {
  auto& mine = channels_[static_cast<int>(k)];
  if (mine.find(channel) != mine.end()) return false;
  mine.emplace(channel);
  held_bytes_ += kSubscriptionBytes + static_cast<int64_t>(channel.size()) * 2;
  counted(1);
  return hub_.subscribe(&ensure(), k, channel);
}

bool Subscriptions::unsubscribe(ChannelKind k, std::string_view channel) {
  auto& mine = channels_[static_cast<int>(k)];
  const auto it = mine.find(channel);
  if (it == mine.end()) return false;
  mine.erase(it);
  held_bytes_ -= kSubscriptionBytes + static_cast<int64_t>(channel.size()) * 2;
  counted(-1);
  return hub_.unsubscribe(sub_.get(), k, channel);
}

bool Subscriptions::psubscribe(std::string_view pattern) {
  if (!pattern_set_.emplace(pattern).second) return false;
  patterns_.emplace_back(pattern);
  held_bytes_ += kSubscriptionBytes + static_cast<int64_t>(pattern.size()) * 2;
  counted(1);
  return hub_.psubscribe(&ensure(), pattern);
}

bool Subscriptions::punsubscribe(std::string_view pattern) {
  const auto at = pattern_set_.find(pattern);
  if (at == pattern_set_.end()) return false;
  pattern_set_.erase(at);
  patterns_.erase(std::find(patterns_.begin(), patterns_.end(), pattern));
  held_bytes_ -= kSubscriptionBytes + static_cast<int64_t>(pattern.size()) * 2;
  counted(-1);
  return hub_.punsubscribe(sub_.get(), pattern);
}

std::vector<std::string> Subscriptions::channels(ChannelKind k) const {
  const auto& mine = channels_[static_cast<int>(k)];
  return {mine.begin(), mine.end()};
}

void Subscriptions::clear() {
  if (!sub_) return;
  const int64_t n = count() + shard_count();
  for (int k = 0; k < 2; ++k) {
    for (const std::string& c : channels_[k])
      hub_.unsubscribe(sub_.get(), static_cast<ChannelKind>(k), c);
    channels_[k].clear();
  }
  for (const std::string& p : patterns_) hub_.punsubscribe(sub_.get(), p);
  counted(-n);
  patterns_.clear();
  pattern_set_.clear();
  held_bytes_ = 0;
}

void carry_publishes(Cluster& cluster, Services& svc) {
  PubSubHub& hub = svc.pubsub;
  cluster.on_request(kPeerPublish, [&hub](uint32_t, std::string body, PeerRespond respond) {
    ChannelKind k;
    std::string_view channel, message;
    if (!decode_published(body, k, channel, message)) {
      return respond(PeerStatus::kError, {}, "malformed published message");
    }
    hub.received.fetch_add(1, std::memory_order_relaxed);
    hub.publish(k, channel, message);
    respond(PeerStatus::kOk, {}, {});
  });
  RoutingHub* routing = svc.routing;
  hub.set_propagate([&cluster, &hub, routing](ChannelKind k, std::string_view channel,
                                              std::string_view message,
                                              std::shared_ptr<std::atomic<int64_t>> by) {
    // (each publishing thread keeps the routing it last read, re-read when it changes)
    thread_local std::shared_ptr<const Routing> rt;
    thread_local uint64_t version = 0;
    if (!rt || routing->version() != version) {
      version = routing->version();
      rt = routing->get();
    }
    if (rt->nodes.size() <= 1) return true;
    const std::string body = encode_published(k, channel, message);
    const auto one = static_cast<int64_t>(body.size());
    int64_t peers = 0;
    for (const RouteNode& n : rt->nodes)
      peers += n.self || n.state == MemberState::kDead || n.state == MemberState::kLeft ? 0 : 1;
    // Room on the bus for a copy to each node, or none of them goes: bounded, and counted
    // against the publisher's connection until each copy is out of the node.
    if (hub.bus_bytes.fetch_add(one * peers, std::memory_order_relaxed) + one * peers >
            PubSubHub::kMaxBusBytes &&
        peers > 0) {
      hub.bus_bytes.fetch_sub(one * peers, std::memory_order_relaxed);
      return false;
    }
    if (by) by->fetch_add(one * peers, std::memory_order_relaxed);
    for (const RouteNode& n : rt->nodes) {
      if (n.self || n.state == MemberState::kDead || n.state == MemberState::kLeft) continue;
      // (not acknowledged: a message is not kept anywhere, and a node that is down has
      // no subscribers to tell)
      cluster.call(n.peer_addr, kPeerPublish, body, std::chrono::milliseconds(2000),
                   [&hub, by, one](PeerStatus, std::string) {
                     hub.bus_bytes.fetch_sub(one, std::memory_order_relaxed);
                     if (by) by->fetch_sub(one, std::memory_order_relaxed);
                   });
    }
    return true;
  });
}

std::string encode_published(ChannelKind k, std::string_view channel, std::string_view message) {
  std::string out;
  out.reserve(5 + channel.size() + message.size());
  out += static_cast<char>(k);
  const size_t at = open_frame(out);
  out.append(channel);
  close_frame(out, at);
  out.append(message);
  return out;
}

bool decode_published(std::string_view body, ChannelKind& k, std::string_view& channel,
                      std::string_view& message) {
  if (body.size() < 5 || static_cast<uint8_t>(body[0]) > 1) return false;
  k = static_cast<ChannelKind>(body[0]);
  const uint32_t n = read_length(body.data() + 1);
  if (n > body.size() - 5) return false;
  channel = body.substr(5, n);
  message = body.substr(5 + n);
  return true;
}

}  // namespace fg
