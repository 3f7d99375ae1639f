// state.proto <-> EntrySnapshot.
#include "state_codec.hpp"

#include <cmath>

#include "hash_value.hpp"
#include "list_value.hpp"
#include "set_value.hpp"
#include "state.pb.h"
#include "stream_value.hpp"
#include "zset_value.hpp"

namespace fg {

namespace {
constexpr uint32_t kStateWireVersion = 2;  // 2: strings and deadlines (EntryMsg 7, 8)
}

std::string encode_state(const std::vector<EntrySnapshot>& entries) {
  return encode_state(entries.data(), entries.data() + entries.size());
}

std::string encode_state(const EntrySnapshot* first, const EntrySnapshot* last) {
  wire::StateChunk chunk;
  chunk.set_version(kStateWireVersion);
  for (const EntrySnapshot* it = first; it != last; ++it) {
    const EntrySnapshot& s = *it;
    auto* e = chunk.add_entries();
    e->set_key(s.key);
    e->set_kind(static_cast<uint32_t>(s.kind));
    for (int64_t f : s.fields) e->add_fields(f);
    for (const auto& [at, cost] : s.log) {
      e->add_log_at_ns(at);
      e->add_log_cost(cost);
    }
    for (const Lease& l : s.leases) {
      auto* m = e->add_leases();
      m->set_id(l.id);
      m->set_expires_at_ns(l.expires_at_ns);
      m->set_holder(l.holder);
    }
    if (s.expires_ms != 0) e->set_expires_at_ms(s.expires_ms);
    if (!s.value.empty()) e->set_value(s.value);
    for (const auto& [f, v] : s.hash) {
      e->add_hash_fields(f);
      e->add_hash_values(v);
    }
    for (const auto& [m, score] : s.zset) {
      e->add_zset_members(m);
      e->add_zset_scores(score);
    }
    for (const auto& item : s.list) e->add_list(item);
  }
  std::string out;
  chunk.SerializeToString(&out);
  return out;
}

bool decode_state(std::string_view bytes, std::vector<EntrySnapshot>& out) {
  wire::StateChunk chunk;
  if (!chunk.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  if (chunk.version() / 1000 > kStateWireVersion / 1000) return false;
  std::vector<EntrySnapshot> got;
  got.reserve(static_cast<size_t>(chunk.entries_size()));
  for (const auto& e : chunk.entries()) {
    if (e.kind() < 1 || e.kind() > static_cast<uint32_t>(kLastKind)) return false;
    EntrySnapshot s;
    s.kind = static_cast<Kind>(e.kind());
    if (e.key().size() > kMaxKeyLen) return false;
    if (static_cast<size_t>(e.fields_size()) != snapshot_field_count(s.kind)) return false;
    if (e.log_at_ns_size() != e.log_cost_size() || e.log_at_ns_size() > kMaxLogLimit) return false;
    if (e.log_at_ns_size() > 0 && s.kind != Kind::kSlidingLog) return false;
    if (e.leases_size() > kMaxLeaseLimit || (e.leases_size() > 0 && s.kind != Kind::kConcurrency)) {
      return false;
    }
    if (e.expires_at_ms() < 0 || (!e.value().empty() && s.kind != Kind::kString)) return false;
    if (e.hash_fields_size() != e.hash_values_size() ||
        static_cast<size_t>(e.hash_fields_size()) > kMaxHashFields ||
        (e.hash_fields_size() > 0 && s.kind != Kind::kHash && s.kind != Kind::kStream)) {
      return false;
    }
    if (e.zset_members_size() != e.zset_scores_size() ||
        static_cast<size_t>(e.zset_members_size()) > kMaxZSetMembers ||
        (e.zset_members_size() > 0 && s.kind != Kind::kZSet)) {
      return false;
    }
    if (static_cast<size_t>(e.list_size()) > (s.kind == Kind::kSet      ? kMaxSetMembers
                                              : s.kind == Kind::kStream ? kMaxStreamEntries
                                                                        : kMaxListElements) ||
        (e.list_size() > 0 && s.kind != Kind::kList && s.kind != Kind::kSet &&
         s.kind != Kind::kStream)) {
      return false;
    }
    s.list.assign(e.list().begin(), e.list().end());
    for (int i = 0; i < e.zset_members_size(); ++i) {
      if (std::isnan(e.zset_scores(i))) return false;
      s.zset.emplace_back(e.zset_members(i), e.zset_scores(i));
    }
    for (int i = 0; i < e.hash_fields_size(); ++i)
      s.hash.emplace_back(e.hash_fields(i), e.hash_values(i));
    s.expires_ms = e.expires_at_ms();
    s.value = e.value();
    s.key = e.key();
    s.fields.assign(e.fields().begin(), e.fields().end());
    for (int i = 0; i < e.log_at_ns_size(); ++i) {
      if (e.log_cost(i) <= 0 || (i > 0 && e.log_at_ns(i) < e.log_at_ns(i - 1))) return false;
      s.log.emplace_back(e.log_at_ns(i), e.log_cost(i));
    }
    for (const auto& l : e.leases())
      s.leases.push_back(Lease{l.id(), l.expires_at_ns(), l.holder()});
    got.push_back(std::move(s));
  }
  out = std::move(got);
  return true;
}

size_t approx_encoded_bytes(const EntrySnapshot& e) {
  size_t n = e.key.size() + 16 + e.fields.size() * 10 + e.log.size() * 20 + e.leases.size() * 40 +
             e.value.size();
  for (const auto& [f, v] : e.hash) n += f.size() + v.size() + 4;
  for (const auto& [m, score] : e.zset) n += m.size() + 12;
  for (const auto& item : e.list) n += item.size() + 3;
  return n;
}

std::vector<std::vector<EntrySnapshot>> split_by_bytes(const std::vector<EntrySnapshot>& entries,
                                                       size_t max_bytes) {
  std::vector<std::vector<EntrySnapshot>> parts(1);
  size_t bytes = 0;
  for (const EntrySnapshot& e : entries) {
    if (bytes > max_bytes) {
      parts.emplace_back();
      bytes = 0;
    }
    bytes += approx_encoded_bytes(e);
    parts.back().push_back(e);
  }
  return parts;
}

std::string slots_to_bytes(const SlotBits& b) {
  std::string out(kSlotCount / 8, '\0');
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (b.test(s)) out[s / 8] = static_cast<char>(out[s / 8] | (1 << (s % 8)));
  return out;
}

bool slots_from_bytes(std::string_view in, SlotBits& b) {
  if (in.size() != kSlotCount / 8) return false;
  b.reset();
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (static_cast<unsigned char>(in[s / 8]) & (1 << (s % 8))) b.set(s);
  return true;
}

}  // namespace fg
