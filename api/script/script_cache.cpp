// The script cache over the settings book.
#include "script_cache.hpp"

#include <algorithm>

#include "errors.hpp"

namespace fg {

namespace {
constexpr std::string_view kPrefix = "script/";
constexpr std::string_view kOwnerPrefix = "scriptby/";  // who loaded each script (its share)
}  // namespace

const std::string* ScriptCache::Catalog::find(std::string_view sha) const {
  if (sha.size() != 40) return nullptr;
  Sha k;
  std::copy(sha.begin(), sha.end(), k.begin());
  const auto it = bodies.find(k);
  return it == bodies.end() ? nullptr : &it->second;
}

ScriptCache::ScriptCache(Book& book, const Clock& clock, size_t max_scripts, size_t max_bytes)
    : book_(book), clock_(clock), max_scripts_(max_scripts), max_bytes_(max_bytes) {
  listener_ = book_.listen([this] { rebuild(); });
  rebuild();
}

ScriptCache::~ScriptCache() { book_.unlisten(listener_); }

Status ScriptCache::add(const std::string& sha, std::string_view body, const Owner& owner) {
  {
    const std::shared_ptr<const Catalog> c = snapshot();
    if (c->has(sha)) return {};
    if (c->size() >= max_scripts_ || c->bytes + body.size() > max_bytes_) {
      return Error{err::script_cache_full(c->size(), c->bytes)};
    }
    if (!owner.name.empty()) {
      const auto it = c->by_owner.find(std::string(owner.name));
      const size_t n = it == c->by_owner.end() ? 0 : it->second.first;
      const size_t bytes = it == c->by_owner.end() ? 0 : it->second.second;
      if (static_cast<int64_t>(n) >= owner.max_scripts ||
          static_cast<int64_t>(bytes + body.size()) > owner.max_bytes) {
        return Error{err::kScriptCacheShare};
      }
      // (the owner first: the body's arrival rebuilds the catalog with it)
      book_.put(std::string(kOwnerPrefix) + sha, std::string(owner.name), false,
                static_cast<uint64_t>(clock_.now_ns() / 1'000'000));
    }
  }
  if (!book_.put(std::string(kPrefix) + sha, std::string(body), false,
                 static_cast<uint64_t>(clock_.now_ns() / 1'000'000))) {
    return Error{err::kSettingsBookFull};
  }
  return {};
}

void ScriptCache::flush() {
  const auto now_ms = static_cast<uint64_t>(clock_.now_ns() / 1'000'000);
  book_.clear_prefix(std::string(kOwnerPrefix), now_ms);
  book_.clear_prefix(std::string(kPrefix), now_ms);
}

void ScriptCache::rebuild() {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Catalog>();
  book_.scan(kPrefix, [&](const std::string& key, const std::string& body) {
    const std::string_view sha = std::string_view(key).substr(kPrefix.size());
    if (sha.size() != 40) return;  // (not one of ours)
    Catalog::Sha k;
    std::copy(sha.begin(), sha.end(), k.begin());
    next->bodies.emplace(k, body);
    next->bytes += body.size();
  });
  book_.scan(kOwnerPrefix, [&](const std::string& key, const std::string& owner) {
    const std::string_view sha = std::string_view(key).substr(kOwnerPrefix.size());
    if (sha.size() != 40) return;
    Catalog::Sha k;
    std::copy(sha.begin(), sha.end(), k.begin());
    const auto body = next->bodies.find(k);
    if (body == next->bodies.end()) return;  // (its script left, or has not come yet)
    auto& [n, bytes] = next->by_owner[owner];
    ++n;
    bytes += body->second.size();
  });
  const std::shared_ptr<const Catalog> old = snapshot();
  bool removed = false;
  for (const auto& [sha, body] : old->bodies) {
    if (!next->bodies.count(sha)) {
      removed = true;
      break;
    }
  }
  if (!removed && next->bodies.size() == old->bodies.size()) return;  // (a policy changed)
  next->generation = old->generation + (removed ? 1 : 0);
  std::atomic_store(&catalog_, std::shared_ptr<const Catalog>(std::move(next)));
  version_.fetch_add(1, std::memory_order_release);
}

}  // namespace fg
