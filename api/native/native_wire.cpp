// Protobuf wire format by hand, for the two messages every request touches.
#include "native_wire.hpp"

#include <cstring>

#include "length_prefix.hpp"

namespace fg::wire {

namespace {

enum : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
// A time zone's name is written up to this long (no zone's name is longer: the node refuses
// longer ones whatever their end).
constexpr size_t kMaxZoneBytes = 80;

struct Reader {
  const char* p;
  const char* end;

  bool varint(uint64_t& v) {
    if (p != end && !(static_cast<uint8_t>(*p) & 0x80)) {  // most fields fit one byte
      v = static_cast<uint8_t>(*p++);
      return true;
    }
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const auto b = static_cast<uint8_t>(*p++);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool fixed64(uint64_t& v) {
    if (end - p < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
    p += 8;
    return true;
  }
  bool bytes(std::string_view& v) {
    uint64_t n;
    if (!varint(n) || n > static_cast<uint64_t>(end - p)) return false;
    v = std::string_view(p, static_cast<size_t>(n));
    p += n;
    return true;
  }
  // Reads the next field's tag; the caller reads (or skips) the value.
  bool tag(uint32_t& field, uint32_t& type) {
    uint64_t t;
    if (!varint(t)) return false;
    field = static_cast<uint32_t>(t >> 3);
    type = static_cast<uint32_t>(t & 7);
    return field != 0;
  }
  bool skip(uint32_t type) {
    uint64_t v;
    std::string_view s;
    switch (type) {
      case kVarint:
        return varint(v);
      case kFixed64:
        return fixed64(v);
      case kBytes:
        return bytes(s);
      case kFixed32:
        if (end - p < 4) return false;
        p += 4;
        return true;
      default:
        return false;  // groups are not used by native.proto
    }
  }
};

char* put_int(char* p, uint32_t field, int64_t v) {
  p = put_varint(p, field << 3 | kVarint);
  return put_varint(p, static_cast<uint64_t>(v));
}
char* put_bytes(char* p, uint32_t field, std::string_view v) {
  p = put_varint(p, field << 3 | kBytes);
  p = put_varint(p, v.size());
  std::memcpy(p, v.data(), v.size());
  return p + v.size();
}

char* write_request(char* p, const RequestView& r) {
  if (r.op) p = put_int(p, 1, r.op);
  if (!r.key.empty()) p = put_bytes(p, 2, r.key);
  if (!r.policy.empty()) p = put_bytes(p, 3, r.policy);
  if (r.has_limit) {
    char m[48 + 2 + kMaxZoneBytes];
    char* q = m;
    if (r.kind) q = put_int(q, 1, r.kind);
    if (r.a) q = put_int(q, 2, r.a);
    if (r.b) q = put_int(q, 3, r.b);
    if (r.period_ms) q = put_int(q, 4, r.period_ms);
    if (!r.time_zone.empty()) q = put_bytes(q, 5, r.time_zone.substr(0, kMaxZoneBytes));
    p = put_bytes(p, 4, std::string_view(m, static_cast<size_t>(q - m)));
  }
  if (r.has_cost) p = put_int(p, 5, r.cost);
  if (r.ttl_ms) p = put_int(p, 6, r.ttl_ms);
  if (r.lease) {
    p = put_varint(p, 7 << 3 | kFixed64);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(r.lease >> (8 * i));
  }
  if (!r.holder.empty()) p = put_bytes(p, 8, r.holder);
  if (r.bound) p = put_int(p, 9, 1);
  if (r.forward) p = put_int(p, 10, 1);
  if (r.cluster_wide) p = put_int(p, 11, 1);
  if (r.wait_ms) p = put_int(p, 12, r.wait_ms);
  return p;
}
}  // namespace

void encode_request(const RequestView& r, std::string& out) {
  // Everything but the three strings takes at most 112 bytes (every number negative: ten
  // bytes each). Small requests (nearly all) are written on the stack and copied once, so
  // a reused `out` is neither grown nor zeroed.
  const size_t most = 128 + kMaxZoneBytes + r.key.size() + r.policy.size() + r.holder.size();
  char small[512];
  if (most <= sizeof small) {
    out.assign(small, static_cast<size_t>(write_request(small, r) - small));
    return;
  }
  out.resize(most);
  out.resize(static_cast<size_t>(write_request(out.data(), r) - out.data()));
}

std::string encode_request(const RequestView& r) {
  std::string o;
  encode_request(r, o);
  return o;
}

void mark_forward(std::string& request) {
  char buf[4];
  char* p = put_int(buf, 10, 1);
  request.append(buf, static_cast<size_t>(p - buf));
}

bool decode_client_frame(std::string_view in, ClientFrameView& out) {
  Reader r{in.data(), in.data() + in.size()};
  out.version = 0;
  out.has_hello = false;
  out.hello = {};
  out.requests.clear();
  while (r.p < r.end) {
    uint32_t f, t;
    if (!r.tag(f, t)) return false;
    uint64_t v;
    std::string_view s;
    if (f == 1 && t == kVarint) {
      if (!r.varint(v)) return false;
      out.version = static_cast<uint32_t>(v);
    } else if (f == 2 && t == kBytes) {
      if (!r.bytes(s)) return false;
      out.has_hello = true;
      out.hello = s;
    } else if (f == 3 && t == kBytes) {
      if (!r.bytes(s)) return false;
      out.requests.push_back(s);
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return true;
}

bool decode_request(std::string_view in, RequestView& out) {
  out = RequestView{};
  Reader r{in.data(), in.data() + in.size()};
  while (r.p < r.end) {
    uint32_t f, t;
    if (!r.tag(f, t)) return false;
    uint64_t v;
    std::string_view s;
    if (t == kVarint && (f == 1 || f == 5 || f == 6 || f == 9 || f == 10 || f == 11 || f == 12)) {
      if (!r.varint(v)) return false;
      const auto i = static_cast<int64_t>(v);
      if (f == 1) out.op = static_cast<int>(i);
      if (f == 5) {
        out.has_cost = true;
        out.cost = i;
      }
      if (f == 6) out.ttl_ms = i;
      if (f == 9) out.bound = v != 0;
      if (f == 10) out.forward = v != 0;
      if (f == 11) out.cluster_wide = v != 0;
      if (f == 12) out.wait_ms = i;
    } else if (t == kBytes && (f == 2 || f == 3 || f == 4 || f == 8)) {
      if (!r.bytes(s)) return false;
      if (f == 2) out.key = s;
      if (f == 3) out.policy = s;
      if (f == 8) out.holder = s;
      if (f == 4) {
        out.has_limit = true;
        Reader m{s.data(), s.data() + s.size()};
        while (m.p < m.end) {
          uint32_t lf, lt;
          if (!m.tag(lf, lt)) return false;
          if (lt == kVarint && lf >= 1 && lf <= 4) {
            if (!m.varint(v)) return false;
            const auto i = static_cast<int64_t>(v);
            if (lf == 1) out.kind = static_cast<int>(i);
            if (lf == 2) out.a = i;
            if (lf == 3) out.b = i;
            if (lf == 4) out.period_ms = i;
          } else if (lt == kBytes && lf == 5) {
            if (!m.bytes(out.time_zone)) return false;
          } else if (!m.skip(lt)) {
            return false;
          }
        }
      }
    } else if (f == 7 && t == kFixed64) {
      if (!r.fixed64(out.lease)) return false;
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return true;
}

bool decode_server_frame(std::string_view in, ServerFrameView& out) {
  Reader r{in.data(), in.data() + in.size()};
  out.version = 0;
  out.push = false;
  out.results.clear();
  out.has_topology = false;
  out.topology = {};
  while (r.p < r.end) {
    uint32_t f, t;
    if (!r.tag(f, t)) return false;
    uint64_t v;
    std::string_view s;
    if ((f == 1 || f == 2) && t == kVarint) {
      if (!r.varint(v)) return false;
      if (f == 1) out.version = static_cast<uint32_t>(v);
      if (f == 2) out.push = v != 0;
    } else if ((f == 3 || f == 4) && t == kBytes) {
      if (!r.bytes(s)) return false;
      if (f == 3) out.results.push_back(s);
      if (f == 4) {
        out.has_topology = true;
        out.topology = s;
      }
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return true;
}

// A field added to ResultView must be reset below too.
static_assert(sizeof(ResultView) == 144, "reset the new ResultView field in decode_result");

bool decode_result(std::string_view in, ResultView& out) {
  // Field by field: assigning a whole fresh ResultView compiles to a `rep stos`, which
  // costs a third of this function.
  out.code = 0;
  out.error = {};
  out.allowed = false;
  out.limit = out.remaining = out.retry_after_ms = out.reset_after_ms = 0;
  out.lease = 0;
  out.value = 0;
  out.slot = 0;
  out.node = {};
  out.has_topology = false;
  out.topology = {};
  out.unavailable = {};
  Reader r{in.data(), in.data() + in.size()};
  while (r.p < r.end) {
    uint32_t f, t;
    if (!r.tag(f, t)) return false;
    uint64_t v;
    std::string_view s;
    if (t == kVarint) {
      if (!r.varint(v)) return false;
      const auto i = static_cast<int64_t>(v);
      switch (f) {
        case 1:
          out.code = static_cast<int>(i);
          break;
        case 3:
          out.allowed = v != 0;
          break;
        case 4:
          out.limit = i;
          break;
        case 5:
          out.remaining = i;
          break;
        case 6:
          out.retry_after_ms = i;
          break;
        case 7:
          out.reset_after_ms = i;
          break;
        case 9:
          out.value = i;
          break;
        case 10:
          out.slot = static_cast<uint32_t>(v);
          break;
        default:
          break;
      }
    } else if (t == kBytes) {
      if (!r.bytes(s)) return false;
      if (f == 2) out.error = s;
      if (f == 11) out.node = s;
      if (f == 12) {
        out.has_topology = true;
        out.topology = s;
      }
      if (f == 13) out.unavailable = s;
    } else if (f == 8 && t == kFixed64) {
      if (!r.fixed64(out.lease)) return false;
    } else if (!r.skip(t)) {
      return false;
    }
  }
  return true;
}

ServerFrameWriter::ServerFrameWriter(std::string& out, uint32_t version)
    : out_(out), start_(open_frame(out)) {
  char buf[12];
  char* p = put_int(buf, 1, version);
  out_.append(buf, static_cast<size_t>(p - buf));
}

void ServerFrameWriter::add(const ResultView& r) {
  // Fields at their proto3 defaults are left out, as the generated code does.
  const size_t strings = r.error.size() + r.node.size() + r.topology.size() + r.unavailable.size();
  char small[160];
  std::string big;
  char* begin = small;
  if (strings > 40) {
    big.resize(strings + 160);
    begin = big.data();
  }
  char* p = begin;
  if (r.code) p = put_int(p, 1, r.code);
  if (!r.error.empty()) p = put_bytes(p, 2, r.error);
  if (r.allowed) p = put_int(p, 3, 1);
  if (r.limit) p = put_int(p, 4, r.limit);
  if (r.remaining) p = put_int(p, 5, r.remaining);
  if (r.retry_after_ms) p = put_int(p, 6, r.retry_after_ms);
  if (r.reset_after_ms) p = put_int(p, 7, r.reset_after_ms);
  if (r.lease) {
    p = put_varint(p, 8 << 3 | kFixed64);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(r.lease >> (8 * i));
  }
  if (r.value) p = put_int(p, 9, r.value);
  if (r.slot) p = put_int(p, 10, r.slot);
  if (!r.node.empty()) p = put_bytes(p, 11, r.node);
  if (r.has_topology) p = put_bytes(p, 12, r.topology);
  if (!r.unavailable.empty()) p = put_bytes(p, 13, r.unavailable);
  const auto len = static_cast<size_t>(p - begin);
  const size_t at = out_.size();
  out_.resize(at + 1 + varint_size(len) + len);
  char* q = out_.data() + at;
  *q++ = static_cast<char>(3 << 3 | kBytes);
  q = put_varint(q, len);
  std::memcpy(q, begin, len);
}

void ServerFrameWriter::push_topology(std::string_view topology) {
  std::string buf(16 + topology.size(), '\0');
  char* p = put_int(buf.data(), 2, 1);
  p = put_bytes(p, 4, topology);
  out_.append(buf.data(), static_cast<size_t>(p - buf.data()));
}

void ServerFrameWriter::finish() { close_frame(out_, start_); }

ClientFrameWriter::ClientFrameWriter(std::string& out, uint32_t version)
    : out_(out), start_(open_frame(out)) {
  char buf[12];
  char* p = put_int(buf, 1, version);
  out_.append(buf, static_cast<size_t>(p - buf));
}

void ClientFrameWriter::hello(std::string_view hello) {
  char head[16];
  char* p = put_varint(head, 2 << 3 | kBytes);
  p = put_varint(p, hello.size());
  out_.append(head, static_cast<size_t>(p - head));
  out_.append(hello);
}

void ClientFrameWriter::add(std::string_view request) {
  char head[16];
  char* p = put_varint(head, 3 << 3 | kBytes);
  p = put_varint(p, request.size());
  out_.append(head, static_cast<size_t>(p - head));
  out_.append(request);
}

void ClientFrameWriter::finish() { close_frame(out_, start_); }

}  // namespace fg::wire
