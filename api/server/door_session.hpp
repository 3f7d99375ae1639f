// What a byte-stream door's session (RespSession, NativeSession) gives the node's
// connection shell (node/client_connection.hpp), which moves the bytes:
//
//   process(data, len, flight) -> ProcessResult   take whole requests from the input
//   complete(flight)                              the flight is back: append its replies
//   output()                                      replies not yet written (what the session
//                                                 made as it was created is written first:
//                                                 a protocol whose server speaks first)
//   held_bytes()                                  what else it holds (maxmemory-clients)
//   evicted()                                     the last batch outgrew its reply room
//   tick()                                        the shell's timer: pushes to make, if any
//   input_too_large()                             one request is larger than the input cap
//   closing()                                     the connection is going: let go of things
//   set_push_wake(wake)                           how messages (pub/sub) wake the shell
//   take_pushes(unsent)                           messages that arrived: into output()
//   output_limit()                                client-output-buffer-limit's class in force
//   subscribed()                                  listens (pub/sub): no idle timeout
//   blocked()                                     waits for a key (BLPOP): no idle timeout
//   wants_turn()                                  blocked, and due to try again: process()
//                                                 it, even with no input
//   rights_hold()                                 after the users changed, with nothing in
//                                                 flight: false when the connection must
//                                                 close (its user went, or it hears what
//                                                 its user may no longer)
//
// and, as static members, how the shell treats its input (kViewsInput, the buffer sizes),
// how often it ticks (kTickMs), what a client over maxclients is told (refuse_full) and
// how the log names its clients (kClientWord).
#pragma once
#include <cstddef>

namespace fg {

struct ProcessResult {
  // Input bytes taken. A session that views its input (kViewsInput) still reads them until
  // its flight is back: the caller drops them then. One that copies drops them at once.
  size_t consumed = 0;
  bool submitted = false;  // requests joined the flight: join the batcher, then complete()
  bool close = false;      // after writing the output, close the connection
  bool stalled = false;    // stopped before a request whose slot's state is still arriving:
                           // call process() again shortly
  // A blocked client (BLPOP) with nothing to do yet: call process() again in this many
  // milliseconds, or sooner when wants_turn() says so (after a wake).
  int64_t retry_ms = 0;
};

// What take_pushes() found: nothing, messages (now in output()), or that they outgrew
// client-output-buffer-limit while the client was not reading (the connection must close).
enum class Pushes : uint8_t { kNone, kSome, kOverflow };

}  // namespace fg
