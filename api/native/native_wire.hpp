// The hot messages of native.proto (Request, Result), read and written in Protobuf's wire
// format without message objects: a request's key is a view into the frame, a result is
// written straight into the output. Everything else (Hello, Topology) goes through the
// generated code. tests/api/native_wire_test.cpp checks both ways against the generated
// code, so the two can never drift apart.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fg::wire {

constexpr uint32_t kNativeVersion = 1;       // ClientFrame.version / ServerFrame.version
constexpr size_t kMaxFrameBytes = 16 << 20;  // a frame's body, either way

struct RequestView {
  int op = 0;
  std::string_view key, policy, holder;
  bool has_limit = false;
  int kind = 0;
  int64_t a = 0, b = 0, period_ms = 0;
  std::string_view time_zone;  // a calendar window's (Limit.time_zone)
  bool has_cost = false;
  int64_t cost = 0;
  int64_t ttl_ms = 0;
  uint64_t lease = 0;
  bool bound = false;
  bool forward = false;       // route it for me (the client cannot reach the owner)
  bool cluster_wide = false;  // heartbeat / release-all: every node's leases
  int64_t wait_ms = 0;        // take: wait for the admission (FG.TAKE ... WAIT)
};

struct ClientFrameView {
  uint32_t version = 0;
  bool has_hello = false;
  std::string_view hello;                  // a Hello message, for the generated parser
  std::vector<std::string_view> requests;  // Request messages
};

// False when the bytes are not a well-formed message (unknown fields are skipped).
bool decode_client_frame(std::string_view in, ClientFrameView& out);
bool decode_request(std::string_view in, RequestView& out);
// A Request message (fields at their defaults left out; `cost` written when has_cost).
std::string encode_request(const RequestView& r);
// The same, into `out` (replacing what it held; its buffer is reused).
void encode_request(const RequestView& r, std::string& out);

// Sets `forward` on an encoded Request (a field appended: order does not matter to readers).
void mark_forward(std::string& request);

// Varints, for writers of frames (inline: every result is a handful of them).
inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// (decode_result resets every field by name: a field added here is added there too.)
struct ResultView {
  int code = 0;
  std::string_view error;
  bool allowed = false;
  int64_t limit = 0, remaining = 0, retry_after_ms = 0, reset_after_ms = 0;
  uint64_t lease = 0;
  int64_t value = 0;
  uint32_t slot = 0;
  std::string_view node;
  bool has_topology = false;
  std::string_view topology;  // a Topology message
  std::string_view unavailable;
};

struct ServerFrameView {
  uint32_t version = 0;
  bool push = false;
  std::vector<std::string_view> results;  // Result messages
  bool has_topology = false;
  std::string_view topology;
};

bool decode_server_frame(std::string_view in, ServerFrameView& out);
bool decode_result(std::string_view in, ResultView& out);

// Writes one ServerFrame (length prefix first) whose results are added one at a time.
class ServerFrameWriter {
 public:
  explicit ServerFrameWriter(std::string& out, uint32_t version = kNativeVersion);
  void add(const ResultView& r);
  // Makes it a push frame carrying `topology` (a Topology message), with no results.
  void push_topology(std::string_view topology);
  void finish();  // fills in the length

 private:
  std::string& out_;
  size_t start_;
};

// Writes one ClientFrame (length prefix first): an optional Hello, then requests.
class ClientFrameWriter {
 public:
  explicit ClientFrameWriter(std::string& out, uint32_t version = kNativeVersion);
  void hello(std::string_view hello);  // a Hello message
  void add(std::string_view request);  // a Request message (encode_request)
  size_t size() const { return out_.size() - start_; }
  void finish();  // fills in the length

 private:
  std::string& out_;
  size_t start_;
};

}  // namespace fg::wire
