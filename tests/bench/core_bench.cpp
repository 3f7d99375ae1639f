// The request core without sockets: what a node spends on a request between the bytes
// arriving and the reply's bytes being ready — parse, route, decide on the shard, encode —
// on one thread, as a node's I/O thread runs it when the shard is idle (in place). This is
// the floor every door's figure in tests/bench/README.md sits on: what run-bench measures
// over that is the kernel's sockets and the event loop.
//
//   build/tests/core_bench                               # every case, ~1 s each
//   build/tests/core_bench --benchmark_filter=Resp       # one family
//   ctest -L floor                                       # the short run CI makes: fails if a
//                                                        # case's first answer is wrong
//
// Each case cycles through 4096 pre-rendered inputs whose keys are drawn from 100000 (so
// the key table is as cold as under redis-benchmark -r 100000). "per_request" is the
// figure to read: CPU time per request, pipelines included.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>

#include "test_node.hpp"

namespace fg {
namespace {

constexpr size_t kInputs = 4096;  // a power of two
int g_wrong = 0;                  // cases whose first answer was not the expected one
constexpr uint64_t kKeys = 100000;

// One node (standalone, or a one-node cluster owning every slot, which adds the routing
// check), its lane driven by the benchmark's thread.
struct Bench {
  explicit Bench(bool cluster)
      : node(sys, SystemClock::process(), cluster, nullptr, 20'000'000, false) {
    PolicyMap pm;
    pm["free"] = LimitSpec::window(Kind::kSlidingLog, 100, 60'000'000'000);  // run-bench's
    node.policies.replace(pm);
    if (cluster) {
      SlotBits all;
      for (uint32_t s = 0; s < kSlotCount; ++s) all.set(s);
      node.serve(all);
      node.publish(make_routing(0, 1, [](uint32_t) { return 0; }));
    }
  }
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  TestNode node;
};

// Told when a flight is back; counts, so the driver knows when to go on.
struct Waiter : BatchWaiter {
  std::function<void(Flight&)> complete;
  bool back = false;
  void batch_complete(Flight& f) override {
    complete(f);
    back = true;
  }
};

// Feeds `in` to a door as a socket's read handler does: process inside a Turn (the flight
// leaves when the Turn closes, running the shards in place), wait for the flight if it did
// not come back at once, go on with what is left.
template <class Session>
void feed(TestNode& n, Session& s, Waiter& w, const std::shared_ptr<Waiter>& wp,
          const std::string& in) {
  size_t pos = 0;
  while (pos < in.size()) {
    bool submitted;
    size_t consumed;
    {
      IoBatcher::Turn turn(*n.batcher);
      auto r = s.process(in.data() + pos, in.size() - pos, n.batcher->current());
      submitted = r.submitted;
      consumed = r.consumed;
      if (submitted) {
        w.back = false;
        n.batcher->join(wp);
      }
    }
    while (submitted && !w.back) n.io.run_one();  // (a shard that was busy answers later)
    if (consumed == 0) return;
    pos += consumed;
  }
}

// CPU time per request (pipelines included), printed as e.g. "85.3ns".
void per_request(benchmark::State& state, int pipeline) {
  state.SetItemsProcessed(state.iterations() * pipeline);
  state.counters["per_request"] =
      benchmark::Counter(static_cast<double>(state.iterations() * pipeline),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

std::string random_key(std::mt19937_64& rng) { return "bench:" + std::to_string(rng() % kKeys); }

// `pipeline` RESP commands per input, words from `words(rng)`.
template <class Words>
std::vector<std::string> resp_inputs(int pipeline, Words words) {
  std::mt19937_64 rng(42);
  std::vector<std::string> inputs;
  for (size_t i = 0; i < kInputs; ++i) {
    std::string in;
    for (int j = 0; j < pipeline; ++j) in += RespConn::resp(words(rng));
    inputs.push_back(std::move(in));
  }
  return inputs;
}

// Runs `inputs` through a door's session, round and round; `why_wrong(output)` checks the
// first answer (empty: as expected).
template <class Session, class Check>
void measure(benchmark::State& state, TestNode& n, const std::shared_ptr<Session>& session,
             const std::vector<std::string>& inputs, int pipeline, Check why_wrong) {
  auto wp = std::make_shared<Waiter>();
  wp->complete = [&](Flight& f) { session->complete(f); };
  feed(n, *session, *wp, wp, inputs[0]);
  if (const std::string why = why_wrong(session->output()); !why.empty()) {
    ++g_wrong;  // (a figure for a wrong answer is no figure: the run fails)
    state.SkipWithError(why.c_str());
    return;
  }
  size_t i = 0;
  for (auto _ : state) {
    feed(n, *session, *wp, wp, inputs[i++ & (kInputs - 1)]);
    session->output().clear();
  }
  per_request(state, pipeline);
}

void run_resp(benchmark::State& state, bool cluster, std::vector<std::string> (*make)(int pipeline),
              const char* reply_starts) {
  const int pipeline = static_cast<int>(state.range(0));
  Bench b(cluster);
  auto session =
      std::make_shared<RespSession>(b.node.svc, b.node.clients.add("127.0.0.1:1", "b", 0));
  measure(state, b.node, session, make(pipeline), pipeline, [&](const std::string& out) {
    return out.rfind(reply_starts, 0) == 0 ? std::string()
                                           : "unexpected reply: " + out.substr(0, 60);
  });
}

std::vector<std::string> ping(int p) {
  return resp_inputs(p, [](std::mt19937_64&) { return std::vector<std::string>{"PING"}; });
}
std::vector<std::string> incr(int p) {
  return resp_inputs(p, [](std::mt19937_64& r) {
    return std::vector<std::string>{"INCR", random_key(r)};
  });
}
// A limit no key reaches (every request allowed and written), as run-native-bench's.
std::vector<std::string> throttle(int p) {
  return resp_inputs(p, [](std::mt19937_64& r) {
    return std::vector<std::string>{"CL.THROTTLE", random_key(r), "100000000", "100000000", "60"};
  });
}
// One request an hour per key: after each key's first, every request is denied (a flood).
std::vector<std::string> throttle_denied(int p) {
  return resp_inputs(p, [](std::mt19937_64& r) {
    return std::vector<std::string>{"CL.THROTTLE", random_key(r), "0", "1", "3600"};
  });
}
std::vector<std::string> take_policy(int p) {
  return resp_inputs(p, [](std::mt19937_64& r) {
    return std::vector<std::string>{"FG.TAKE", random_key(r), "free"};
  });
}

void BM_RespPing(benchmark::State& s) { run_resp(s, false, ping, "+PONG"); }
void BM_RespIncr(benchmark::State& s) { run_resp(s, false, incr, ":"); }
void BM_RespClThrottle(benchmark::State& s) { run_resp(s, false, throttle, "*5"); }
void BM_RespFgTakeSlidingLog(benchmark::State& s) { run_resp(s, false, take_policy, "*5"); }
void BM_RespClThrottleCluster(benchmark::State& s) { run_resp(s, true, throttle, "*5"); }
void BM_RespClThrottleDenied(benchmark::State& s) { run_resp(s, false, throttle_denied, "*5"); }

// Native TAKE with an inline GCRA limit, `pipeline` requests per frame.
void BM_NativeTakeGcra(benchmark::State& state) {
  const int pipeline = static_cast<int>(state.range(0));
  Bench b(false);
  TestNode& n = b.node;
  auto session = std::make_shared<NativeSession>(n.svc, n.clients.add("127.0.0.1:3", "b", 0));
  std::mt19937_64 rng(42);
  std::vector<std::string> inputs;
  for (size_t i = 0; i < kInputs; ++i) {
    std::string frame;
    wire::ClientFrameWriter w(frame);
    std::vector<std::string> keys;
    for (int j = 0; j < pipeline; ++j) keys.push_back(random_key(rng));
    for (int j = 0; j < pipeline; ++j) {
      wire::RequestView r;
      r.op = floodgate::native::TAKE;
      r.key = keys[static_cast<size_t>(j)];
      r.has_limit = true;
      r.kind = floodgate::native::GCRA;
      r.a = 100'000'000;  // a limit no key reaches, as run-native-bench's
      r.b = 100'000'000;
      r.period_ms = 60000;
      w.add(wire::encode_request(r));
    }
    w.finish();
    inputs.push_back(std::move(frame));
  }
  measure(state, n, session, inputs, pipeline, [](const std::string& out) {
    return out.size() < 4 ? std::string("no answer frame") : std::string();
  });
}

// What threads share on the request path: two I/O threads, each running a shard of its own
// in place, making and forgetting keys (batches of 8 takes on new keys and 8 resets of the
// last batch's), with the node's one Accounts between them. Its time is per batch of 16 and
// per thread: Threads(2) should cost what Threads(1) does: a line both write per key (as the
// account tallies were before they were gathered per batch) shows as the difference
// (tests/bench/README.md).
void BM_ShardsSharingAccounts(benchmark::State& state) {
  static std::shared_ptr<Accounts> accounts = std::make_shared<Accounts>();
  Shard shard(10'000'000, 1);
  shard.set_accounts(accounts);
  const std::string prefix = "t" + std::to_string(state.thread_index()) + ":";
  std::vector<std::string> keys(16);
  std::vector<ShardOp> ops(16);
  uint64_t n = 0;
  const LimitSpec spec = LimitSpec::token_bucket(100, 1, 60'000'000'000);
  for (auto _ : state) {
    for (size_t i = 0; i < 8; ++i) {
      keys[8 + i] = keys[i];  // last batch's, to forget
      keys[i] = prefix + std::to_string(n++);
    }
    for (size_t i = 0; i < 16; ++i) {
      ops[i] = ShardOp();
      ops[i].code = i < 8 || keys[i].empty() ? OpCode::kTake : OpCode::kReset;
      ops[i].key = keys[i].empty() ? keys[0] : keys[i];
      ops[i].spec = spec;
      ops[i].shard = 0;
    }
    shard.execute_batch(ops, 0, 1'700'000'000'000'000'000);
  }
}

// The same shared line alone: a charge per key made or gone, on one tally both threads add
// to, against the same amount gathered and added once per 16 (time per 16 keys, per thread).
void BM_AccountsChargePerKey(benchmark::State& state) {
  static Accounts accounts;
  for (auto _ : state) {
    for (int i = 0; i < 16; ++i) accounts.charge_key(0, 1, 80);
  }
}
void BM_AccountsChargePerBatch(benchmark::State& state) {
  static Accounts accounts;
  for (auto _ : state) {
    int64_t keys = 0, bytes = 0;
    for (int i = 0; i < 16; ++i) {
      keys += 1;
      bytes += 80;
      benchmark::DoNotOptimize(bytes);
    }
    accounts.charge_key(0, keys, bytes);
  }
}

BENCHMARK(BM_RespPing)->Arg(1)->Arg(16);
BENCHMARK(BM_RespIncr)->Arg(1)->Arg(16);
BENCHMARK(BM_RespClThrottle)->Arg(1)->Arg(16);
BENCHMARK(BM_RespFgTakeSlidingLog)->Arg(16);
BENCHMARK(BM_RespClThrottleCluster)->Arg(16);
BENCHMARK(BM_RespClThrottleDenied)->Arg(16);
BENCHMARK(BM_NativeTakeGcra)->Arg(16)->Arg(256);
BENCHMARK(BM_ShardsSharingAccounts)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_AccountsChargePerKey)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_AccountsChargePerBatch)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace fg

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (fg::g_wrong > 0) {
    std::fprintf(stderr, "core_bench: %d case(s) answered wrongly\n", fg::g_wrong);
    return 1;
  }
  return 0;
}
