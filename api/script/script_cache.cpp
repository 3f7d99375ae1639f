// The script cache over the settings book.
#include "script_cache.hpp"

#include <algorithm>

#include "errors.hpp"

namespace fg {

namespace {
constexpr std::string_view kPrefix = "script/";
}

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

Status ScriptCache::add(const std::string& sha, std::string_view body) {
  {
    const std::shared_ptr<const Catalog> c = snapshot();
    if (c->has(sha)) return {};
    if (c->size() >= max_scripts_ || c->bytes + body.size() > max_bytes_) {
      return Error{err::script_cache_full(c->size(), c->bytes)};
    }
  }
  if (!book_.put(std::string(kPrefix) + sha, std::string(body), false,
                 static_cast<uint64_t>(clock_.now_ns() / 1'000'000))) {
    return Error{err::kSettingsBookFull};
  }
  return {};
}

void ScriptCache::flush() {
  book_.clear_prefix(std::string(kPrefix), static_cast<uint64_t>(clock_.now_ns() / 1'000'000));
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
