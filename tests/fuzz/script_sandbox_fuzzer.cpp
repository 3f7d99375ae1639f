// libFuzzer target: scripts that try to leave something behind in the sandbox, run by EVAL
// through a whole RESP door and its shard in place. An input whose first byte is a multiple
// of four is a list of generated escape attempts (script_world.hpp: assignments, rawset,
// setmetatable on every table a script can reach, loadstring'd code, coroutines; four bytes
// each, pcall'd or not); one whose first byte is 2 modulo 4, calls of the bit, struct,
// cjson and cmsgpack libraries with their arguments' edges (four bytes a call); one with an
// odd first byte is Lua source as it stands. After each, a
// second script describes the world a script sees: it must be what it was before any input,
// and the node must never crash, leak or hang (scripts stop at a 50 ms budget here: the
// sanitizers slow them down).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "book.hpp"
#include "fuzz_world.hpp"
#include "resp_reply.hpp"
#include "resp_session.hpp"
#include "script_cache.hpp"
#include "script_engine.hpp"
#include "script_world.hpp"

namespace {

std::string eval(const std::string& script) {
  return "*3\r\n$4\r\nEVAL\r\n$" + std::to_string(script.size()) + "\r\n" + script +
         "\r\n$1\r\n0\r\n";
}

// The replies to `commands` (RESP), each a whole value.
std::vector<std::string> run(fuzz::World& w, fg::Shard& shard, const std::string& commands) {
  fg::RespSession session(w.svc, w.clients.add("fuzz", "fuzz", 0));
  fg::Flight flight;
  size_t begin = 0;
  for (int rounds = 0; rounds < 100 && begin < commands.size(); ++rounds) {
    flight.clear();
    fg::ProcessResult r = session.process(commands.data() + begin, commands.size() - begin, flight);
    if (r.submitted) {
      fuzz::fly(flight, shard, w.clock, commands.data(), commands.size(), begin);
      session.complete(flight);
    }
    begin += r.consumed;
    if (r.close || r.consumed == 0) break;
  }
  std::vector<std::string> replies;
  const std::string& out = session.output();
  for (size_t pos = 0; pos < out.size();) {
    const size_t n = fg::resp_value_length(out.data() + pos, out.size() - pos);
    if (n == 0) __builtin_trap();  // (not whole RESP values)
    replies.push_back(out.substr(pos, n));
    pos += n;
  }
  w.clients.remove(session.client().id);
  return replies;
}

}  // namespace

// The node's script engine on the fuzz world's one shard, kept across inputs (what one input
// leaves behind, the next one sees), as a node's shard keeps its Lua state.
fg::Shard& scripted_shard(fuzz::World& w) {
  static fg::Book book("fuzz");
  static fg::ScriptCache cache(book, w.clock, 1000, 1 << 20);
  fg::ScriptLimits limits;
  limits.budget_ms = 50;  // (the sanitizers slow every run down; an endless loop still ends)
  static fg::ScriptEngine engine(1, false, limits, &fg::script_callable, cache);
  static fg::Shard* shard = [&w] {
    auto* s = new fg::Shard(1000, 7);
    s->attach_scripts(&engine, 0);
    w.svc.scripts = &engine;
    return s;
  }();
  return *shard;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fuzz::World& w = fuzz::world();
  fg::Shard& shard = scripted_shard(w);
  static const std::string world = run(w, shard, eval(fg::script_world::kWorld)).at(0);
  if (world.empty() || world[0] != '*') __builtin_trap();  // (scripts must run at all)
  std::string script;
  if (data[0] & 1) {
    script.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  } else if (data[0] & 2) {  // the libraries' argument edges (script_world.hpp)
    for (size_t i = 1; i + 4 <= size && i < 1 + 4 * 8; i += 4) {
      script += fg::script_world::library_call(data[i], data[i + 1], data[i + 2], data[i + 3]);
      script += " ";
    }
    script += "return 1";
  } else {
    for (size_t i = 1; i + 4 <= size && i < 1 + 4 * 8; i += 4) {
      const std::string a =
          fg::script_world::attempt(data[i], data[i + 1], data[i + 2], data[i + 3]);
      script += data[i] & 0x80 ? "pcall(function() " + a + " end) " : a + " ";
    }
    script += "return 1";
  }
  const std::vector<std::string> replies =
      run(w, shard, eval(script) + eval(fg::script_world::kWorld));
  if (replies.size() == 2 && replies[1].find("ran past its budget") != std::string::npos) {
    return 0;  // (the description itself was cut short by the clock: says nothing)
  }
  if (replies.size() != 2 || replies[1] != world) {  // the world changed: say how, and stop
    std::fprintf(stderr, "script: %s\n%zu replies\n", script.c_str(), replies.size());
    for (const std::string& r : replies) std::fprintf(stderr, "reply: %s\n", r.c_str());
    std::fprintf(stderr, "world before: %s\n", world.c_str());
    __builtin_trap();
  }
  return 0;
}
