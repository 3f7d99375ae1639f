// The last-writer-wins book: merge rule, digest and wire form.
#include "book.hpp"

#include <tuple>

#include "gossip.pb.h"

namespace fg {

namespace {
uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;  // separator: "ab","c" differs from "a","bc"
}

uint64_t digest_of(const BookEntries& entries) {
  uint64_t h = 14695981039346656037ull;
  for (const auto& [key, e] : entries) {
    h = fnv1a(h, key);
    h = fnv1a(h, std::to_string(e.version) + (e.deleted ? "-" : "+"));
    h = fnv1a(h, e.origin);
    h = fnv1a(h, e.value);
  }
  return h == 0 ? 1 : h;  // 0 is "no book" on the wire
}
}  // namespace

// A clear marker's key: this byte, then the prefix it clears. Ordinary keys never start
// with it, and markers sort before every other key.
constexpr char kMarker = '\x01';

namespace {
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
}  // namespace

bool book_wins(const BookEntry& a, const BookEntry& b) {
  return std::tie(a.version, a.origin, a.deleted, a.value) >
         std::tie(b.version, b.origin, b.deleted, b.value);
}

bool Book::put(const std::string& key, std::string value, bool deleted, uint64_t now_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() && entries_.size() >= kMaxEntries) return false;
    BookEntry e;
    e.value = deleted ? std::string() : std::move(value);
    e.deleted = deleted;
    e.origin = origin_;
    e.version = std::max(now_ms, cleared_at(key) + 1);
    if (it != entries_.end()) e.version = std::max(e.version, it->second.version + 1);
    entries_[key] = std::move(e);
    digest_ = digest_of(entries_);
  }
  changed();
  return true;
}

bool Book::clear_prefix(const std::string& prefix, uint64_t now_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string mkey = kMarker + prefix;
    auto it = entries_.find(mkey);
    if (it == entries_.end() && entries_.size() >= kMaxEntries) return false;
    // Newer than everything it clears, whatever clocks stamped those.
    uint64_t v = now_ms;
    for (auto e = entries_.lower_bound(prefix);
         e != entries_.end() && starts_with(e->first, prefix); ++e)
      v = std::max(v, e->second.version);
    if (it != entries_.end()) v = std::max(v, it->second.version + 1);
    BookEntry m;
    m.origin = origin_;
    m.version = v;
    entries_[mkey] = std::move(m);
    apply_markers();
    digest_ = digest_of(entries_);
  }
  changed();
  return true;
}

void Book::scan(std::string_view prefix,
                const std::function<void(const std::string&, const std::string&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto e = entries_.lower_bound(prefix); e != entries_.end() && starts_with(e->first, prefix);
       ++e) {
    if (!e->second.deleted) fn(e->first, e->second.value);
  }
}

uint64_t Book::cleared_at(const std::string& key) const {
  uint64_t v = 0;
  for (auto m = entries_.begin(); m != entries_.end() && m->first[0] == kMarker; ++m) {
    if (starts_with(key, std::string_view(m->first).substr(1))) v = std::max(v, m->second.version);
  }
  return v;
}

size_t Book::apply_markers() {
  size_t n = 0;
  for (auto m = entries_.begin(); m != entries_.end() && m->first[0] == kMarker; ++m) {
    const std::string_view prefix = std::string_view(m->first).substr(1);
    if (prefix.empty()) continue;  // (would clear the markers themselves)
    for (auto e = entries_.lower_bound(prefix);
         e != entries_.end() && starts_with(e->first, prefix);) {
      if (e->second.version <= m->second.version) {
        e = entries_.erase(e);
        ++n;
      } else {
        ++e;
      }
    }
  }
  return n;
}

size_t Book::merge(const BookEntries& in) {
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, e] : in) {
      auto it = entries_.find(key);
      if (it == entries_.end()) {
        if (entries_.size() >= kMaxEntries) continue;
        entries_.emplace(key, e);
        ++n;
      } else if (book_wins(e, it->second)) {
        it->second = e;
        ++n;
      }
    }
    // (an entry a marker clears is dropped here even if it just arrived: the result is the
    // same whichever of the two a node heard first)
    if (n) {
      apply_markers();
      digest_ = digest_of(entries_);
    }
  }
  if (n) changed();
  return n;
}

BookEntries Book::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

uint64_t Book::digest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.empty() ? 0 : digest_;
}

size_t Book::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

int Book::listen(Listener fn) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_[next_listener_] = std::move(fn);
  return next_listener_++;
}

void Book::unlisten(int id) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.erase(id);
}

void Book::changed() {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  for (auto& [id, fn] : listeners_) fn();
}

std::string Book::encode(const BookEntries& entries) {
  wire::BookMsg msg;
  for (const auto& [key, e] : entries) {
    auto* m = msg.add_entries();
    m->set_key(key);
    m->set_value(e.value);
    m->set_version(e.version);
    m->set_origin(e.origin);
    m->set_deleted(e.deleted);
  }
  return msg.SerializeAsString();
}

bool Book::decode(const std::string& bytes, BookEntries& out) {
  wire::BookMsg msg;
  if (!msg.ParseFromString(bytes)) return false;
  for (const auto& m : msg.entries()) {
    BookEntry e;
    e.value = m.value();
    e.version = m.version();
    e.origin = m.origin();
    e.deleted = m.deleted();
    auto it = out.find(m.key());
    if (it == out.end() || book_wins(e, it->second)) out[m.key()] = std::move(e);
  }
  return true;
}

}  // namespace fg
