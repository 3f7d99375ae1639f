// libFuzzer target: any frames through a whole native door — framing, the hand-written
// frame and request decoder, hello, every op, the request core, the shard logic (run in
// place) and the answer encoder — alone or (last byte odd) as the cluster member of
// fuzz_world.hpp, whose forwarded requests get the input's own bytes back as answers.
//
// The input is cut into frames: a byte n < 0xF0 is followed by a frame of n bytes (fewer
// if the input ends), which gets its 4-byte length; a byte >= 0xF0 is followed by 4 bytes
// copied as they are (any length prefix, bogus ones included). Seeds: tests/fuzz/native/,
// encoded by tests/fuzz/run. The node must never crash, leak or hang, and its output must
// be whole frames, each a ServerFrame, one per request frame taken (plus topology pushes).
#include <cstdint>
#include <string>

#include "fuzz_world.hpp"
#include "length_prefix.hpp"
#include "native.pb.h"
#include "native_session.hpp"

namespace {

std::string frames_of(const uint8_t* data, size_t size) {
  std::string out;
  for (size_t i = 0; i < size;) {
    const uint8_t b = data[i++];
    if (b >= 0xF0) {
      const size_t n = std::min<size_t>(4, size - i);
      out.append(reinterpret_cast<const char*>(data + i), n);
      i += n;
      continue;
    }
    const size_t n = std::min<size_t>(b, size - i);
    const size_t at = fg::open_frame(out);
    out.append(reinterpret_cast<const char*>(data + i), n);
    fg::close_frame(out, at);
    i += n;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::World& w = fuzz::world();
  fg::Shard shard(1000, 7);
  const bool cluster = size > 0 && (data[size - 1] & 1);
  auto client = w.clients.add("fuzz", "fuzz", 0);
  const std::string input = frames_of(data, size);
  size_t answers_due = 0, answers_least = 0;  // (they differ once a bad frame closes)
  {
    fg::NativeSession session(cluster ? w.csvc : w.svc, client);
    fg::Flight flight;
    size_t begin = 0;
    for (int rounds = 0; rounds < 10000 && begin < input.size(); ++rounds) {
      flight.clear();
      fg::ProcessResult r = session.process(input.data() + begin, input.size() - begin, flight);
      if (r.submitted) {
        fuzz::fly(flight, shard, w.clock, input.data(), input.size(), begin);
        session.complete(flight);
      }
      // Every whole frame taken is answered by exactly one frame; a bad one (which takes
      // the rest of the input) is answered, and so is every frame before it.
      if (r.close) answers_least = answers_due + 1;
      for (size_t pos = begin; pos + 4 <= begin + r.consumed;) {
        ++answers_due;
        pos += 4 + size_t{fg::read_length(input.data() + pos)};
      }
      if (!r.close) answers_least = answers_due;
      w.clock.advance_ms(7);
      begin += r.consumed;
      if (r.close || r.consumed == 0) break;
    }
    session.push_topology_if_changed();
    // The output: whole frames, each a ServerFrame; as many answers as frames taken.
    const std::string& out = session.output();
    size_t answers = 0;
    for (size_t pos = 0; pos < out.size();) {
      if (out.size() - pos < 4) __builtin_trap();
      const uint32_t n = fg::read_length(out.data() + pos);
      if (out.size() - pos - 4 < n) __builtin_trap();
      floodgate::native::ServerFrame f;
      if (!f.ParseFromArray(out.data() + pos + 4, static_cast<int>(n))) __builtin_trap();
      if (!f.push()) ++answers;
      pos += 4 + n;
    }
    if (answers < answers_least || answers > answers_due) __builtin_trap();
  }
  w.clients.remove(client->id);
  return 0;
}
