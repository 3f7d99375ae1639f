// libFuzzer target: any bytes through a whole RESP door — parser, every command handler,
// the request core, the shard logic (run in place, without actors) and the reply encoder,
// alone or (first byte odd) as a cluster member whose routing sends some slots elsewhere,
// holds others as arriving, and gets the fuzz input's own bytes back as the owner's answers
// to forwarded requests. Must never crash, leak, hang or produce a reply stream that is not
// whole RESP values.
#include <cstdint>

#include "fuzz_world.hpp"
#include "resp_reply.hpp"
#include "resp_session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::World& w = fuzz::world();
  fg::Shard shard(1000, 7);
  const bool cluster = size > 0 && (data[0] & 1);
  fg::RespSession session(cluster ? w.csvc : w.svc, w.clients.add("fuzz", "fuzz", 0));
  fg::Flight flight;
  const char* in = reinterpret_cast<const char*>(data);
  size_t begin = 0;
  for (int rounds = 0; rounds < 10000 && begin < size; ++rounds) {
    flight.clear();
    fg::ProcessResult r = session.process(in + begin, size - begin, flight);
    if (r.submitted) {
      fuzz::fly(flight, shard, w.clock, in, size, begin);
      session.complete(flight);
    }
    w.clock.advance_ms(7);
    begin += r.consumed;
    if (r.close || r.consumed == 0) break;
  }
  // The output must be whole RESP values, back to back, and nothing else.
  const std::string& out = session.output();
  for (size_t pos = 0; pos < out.size();) {
    const size_t n = fg::resp_value_length(out.data() + pos, out.size() - pos);
    if (n == 0) __builtin_trap();
    pos += n;
  }
  w.clients.remove(session.client().id);
  return 0;
}
