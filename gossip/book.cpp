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
    e.version = now_ms;
    if (it != entries_.end()) e.version = std::max(now_ms, it->second.version + 1);
    entries_[key] = std::move(e);
    digest_ = digest_of(entries_);
  }
  changed();
  return true;
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
    if (n) digest_ = digest_of(entries_);
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
