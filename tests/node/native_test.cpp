// floodgate::Client and floodgate-cli against a real standalone node over the native
// protocol: every request kind, errors, batching, all-or-nothing checks (including a
// caller that dies midway), the Holder, bad frames, and the CLI's exit codes.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "floodgate/client.hpp"
#include "length_prefix.hpp"
#include "native.pb.h"
#include "node_process.hpp"

namespace fg::testing {
namespace {

using floodgate::Limit;
using floodgate::Status;

struct NativeNode {
  int native_port = free_port();
  NodeProcess node{{"--native-port", std::to_string(native_port), "--config",
                    std::string(FLOODGATE_SOURCE_DIR) + "/deploy/floodgate.example.yaml"}};
  floodgate::Client::Options options() const {
    floodgate::Client::Options o;
    o.seeds = {"127.0.0.1:" + std::to_string(native_port)};
    o.deadline = std::chrono::milliseconds(3000);
    return o;
  }
};

TEST(Native, EveryRequestKind) {
  NativeNode n;
  ASSERT_TRUE(n.node.alive());
  floodgate::Client c(n.options());
  const Limit bucket = Limit::token_bucket(3, 1, 60000);
  auto t = c.take("k", bucket, 2);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(t->allowed);
  EXPECT_EQ(t->limit, 3);
  EXPECT_EQ(t->remaining, 1);
  EXPECT_EQ(t->retry_after_ms, -1);
  auto denied = c.take("k", bucket, 2);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_GT(denied->retry_after_ms, 50000);
  auto p = c.peek("k", bucket, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->allowed);
  EXPECT_EQ(p->remaining, 1);  // peeking consumed nothing
  EXPECT_EQ(c.take("k", bucket, 0)->remaining, 1);
  EXPECT_TRUE(*c.reset("k"));
  EXPECT_FALSE(*c.reset("k"));
  EXPECT_EQ(c.take("k", bucket, 1)->remaining, 2);

  // A named policy from the config (free: 100 per minute).
  auto f = c.take("api:user:1", Limit::policy("free"));
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->limit, 100);
  EXPECT_EQ(f->remaining, 99);

  // Leases.
  const Limit two = Limit::concurrency(2, 60000);
  auto l1 = c.acquire("conn:u1", two, "app-1");
  auto l2 = c.acquire("conn:u1", two, "app-1");
  auto l3 = c.acquire("conn:u1", two, "app-1");
  ASSERT_TRUE(l1.ok() && l2.ok() && l3.ok());
  EXPECT_TRUE(l1->granted);
  EXPECT_NE(l1->id, 0u);
  EXPECT_TRUE(l2->granted);
  EXPECT_FALSE(l3->granted);
  EXPECT_GT(l3->retry_after_ms, 0);
  EXPECT_EQ(*c.count("conn:u1"), 2);
  EXPECT_TRUE(*c.renew("conn:u1", l1->id, 90000));
  EXPECT_EQ(*c.heartbeat("app-1", 90000), 2);
  EXPECT_TRUE(*c.release("conn:u1", l1->id));
  EXPECT_FALSE(*c.release("conn:u1", l1->id));
  EXPECT_EQ(*c.release_all("app-1"), 1);
  EXPECT_EQ(*c.count("conn:u1"), 0);

  auto topo = c.topology();
  ASSERT_TRUE(topo.ok());
  EXPECT_FALSE(topo->cluster);
}

// A shadow policy through the native door: counted, never denying, in take and in check_all
// (it does not hold the other limits back).
TEST(Native, AShadowPolicyCountsButNeverDenies) {
  NativeNode n;
  ASSERT_TRUE(n.node.alive());
  ASSERT_EQ(run("redis-cli -p " + std::to_string(n.node.port()) +
                " FG.POLICY SET trial fixed_window 2 3600000 SHADOW"),
            "OK\n");
  floodgate::Client c(n.options());
  for (int i = 0; i < 4; ++i) {
    auto t = c.take("s:1", Limit::policy("trial"));
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_TRUE(t->allowed) << i;
    EXPECT_EQ(t->remaining, i < 2 ? 1 - i : 0);
  }
  auto all = c.check_all(
      {{"s:1", Limit::policy("trial"), 1}, {"s:2", Limit::fixed_window(5, 3600000), 1}});
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_TRUE(all->allowed);
  EXPECT_EQ(c.peek("s:2", Limit::fixed_window(5, 3600000), 1)->remaining, 4);  // (committed)
}

// Client::adjust: a cost charged afterwards into debt, then refunded (a negative delta on
// the wire), and what an owed bucket answers a take.
TEST(Native, AdjustChargesIntoDebtAndRefunds) {
  NativeNode n;
  ASSERT_TRUE(n.node.alive());
  floodgate::Client c(n.options());
  const Limit bucket = Limit::token_bucket(10, 1, 3600000);  // (no refill to speak of)
  ASSERT_TRUE(c.take("tokens:u1", bucket, 4)->allowed);
  auto debt = c.adjust("tokens:u1", bucket, 9);  // 6 were left: 3 owed
  ASSERT_TRUE(debt.ok()) << debt.error();
  EXPECT_FALSE(debt->allowed);
  EXPECT_EQ(debt->remaining, -3);
  EXPECT_FALSE(c.take("tokens:u1", bucket, 1)->allowed);
  auto back = c.adjust("tokens:u1", bucket, -5);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->remaining, 2);
  EXPECT_TRUE(c.take("tokens:u1", bucket, 1)->allowed);
  auto wrong = c.adjust("conn", Limit::concurrency(2, 1000), 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(),
            "ERR FG.ADJUST is for rate limits: a concurrency limit's leases are given back with "
            "FG.RELEASE");
}

// A calendar window through the native protocol: the period and zone travel as the limit's
// b and time_zone; an unknown zone is refused in the RESP door's words.
TEST(Native, CalendarWindows) {
  NativeNode n;
  ASSERT_TRUE(n.node.alive());
  floodgate::Client c(n.options());
  const Limit daily = Limit::calendar_window(2, Limit::Period::kDay, "Asia/Kolkata");
  for (int i = 0; i < 2; ++i) {
    auto t = c.take("cal:u1", daily);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_TRUE(t->allowed);
    EXPECT_EQ(t->remaining, 1 - i);
    EXPECT_GT(t->reset_after_ms, 0);
    EXPECT_LE(t->reset_after_ms, 24 * 3600 * 1000);  // (Kolkata has no DST)
  }
  auto denied = c.take("cal:u1", daily);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->retry_after_ms, denied->reset_after_ms);
  // Another zone is another limit on another key; the same key in another kind is refused.
  EXPECT_TRUE(c.take("cal:u2", Limit::calendar_window(1, Limit::Period::kMonth))->allowed);
  EXPECT_EQ(c.take("cal:u1", Limit::fixed_window(2, 1000)).status(), Status::kWrongType);
  auto bad = c.take("cal:u3", Limit::calendar_window(2, Limit::Period::kDay, "Nowhere/Land"));
  EXPECT_EQ(bad.error(),
            "ERR unknown time zone (a name of the tz database, such as UTC or Europe/Berlin)");
  auto long_zone =
      c.take("cal:u3", Limit::calendar_window(2, Limit::Period::kDay, std::string(5000, 'Z')));
  EXPECT_EQ(long_zone.error(), bad.error());
  Limit odd = daily;
  odd.b = 9;
  EXPECT_EQ(c.take("cal:u3", odd).error(),
            "ERR calendar_window's period must be day, week, month or year");
}

TEST(Native, ErrorsAreClearAndInRedisWords) {
  NativeNode n;
  floodgate::Client c(n.options());
  auto unknown = c.take("k", Limit::policy("nosuch"));
  EXPECT_EQ(unknown.status(), Status::kError);
  EXPECT_EQ(unknown.error(), "ERR unknown policy 'nosuch'");
  ASSERT_TRUE(c.take("tb", Limit::token_bucket(3, 1, 1000)).ok());
  auto wrong = c.take("tb", Limit::sliding_log(3, 1000));
  EXPECT_EQ(wrong.status(), Status::kWrongType);
  EXPECT_EQ(wrong.error(), "WRONGTYPE Operation against a key holding the wrong kind of value");
  EXPECT_EQ(c.take("k", Limit::token_bucket(0, 1, 1000)).status(), Status::kError);
  EXPECT_EQ(c.take("k", Limit::token_bucket(1000000, 1, 3600000)).error().rfind("ERR ", 0), 0u);
  EXPECT_EQ(c.take("k", Limit::token_bucket(3, 1, -5)).error(),
            "ERR value is out of range, must be positive");
  EXPECT_EQ(c.take(std::string(5000, 'k'), Limit::token_bucket(3, 1, 1000)).error(),
            "ERR key is too long (at most 4096 bytes)");
  EXPECT_EQ(c.acquire("c", Limit::token_bucket(3, 1, 1000)).error(),
            "ERR policy is not a concurrency limit: use FG.TAKE");
  EXPECT_EQ(c.renew("c", 0, 1000).error(), "ERR invalid lease id");
  // The node still serves.
  EXPECT_TRUE(c.take("ok", Limit::token_bucket(3, 1, 1000))->allowed);
}

TEST(Native, BatchedAsyncCallsCountExactly) {
  NativeNode n;
  floodgate::Client c(n.options());
  const Limit limit = Limit::token_bucket(5000, 1, 3600000);
  constexpr int kCalls = 20000;
  std::atomic<int> allowed{0}, done{0}, errors{0};
  std::promise<void> all;
  for (int i = 0; i < kCalls; ++i) {
    c.take("hot", limit, 1, [&](floodgate::Result<floodgate::Decision> r) {
      if (!r.ok())
        ++errors;
      else if (r->allowed)
        ++allowed;
      if (++done == kCalls) all.set_value();
    });
  }
  ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), 5000);  // never one more, however the calls were batched
  const auto st = c.stats();
  EXPECT_LT(st.frames, static_cast<uint64_t>(kCalls) / 4);  // they did travel in batches
}

// Call objects are reused once answered: made on one thread, answered and recycled on the
// client's, made again from callbacks. Every answer must still be its own call's: each
// thread's keys have their own limits, so an answer delivered to the wrong call shows.
TEST(Native, ReusedCallsAnswerTheirOwnCallerFromEveryThread) {
  NativeNode n;
  // (Declared before the client, so the client's thread is gone before they are.)
  struct Chain {
    std::atomic<int> issued{0}, done{0};
    std::promise<void> all;
    std::function<void()> next;
  } ch;
  std::vector<std::atomic<int>> seen(50);
  floodgate::Client c(n.options());
  constexpr int kThreads = 4, kBlocking = 300, kChained = 3000;
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Blocking calls, this thread's own key: limit 100 + t, counted down exactly.
      const std::string key = "reuse:blocking:" + std::to_string(t);
      const Limit limit = Limit::fixed_window(100 + t, 3600000);
      for (int i = 0; i < kBlocking; ++i) {
        auto d = c.take(key, limit);
        if (!d.ok()) {
          ++errors;
          continue;
        }
        const int64_t want = std::max<int64_t>(0, 100 + t - (i + 1));
        if (d->limit != 100 + t || d->remaining != want || d->allowed != (i < 100 + t)) ++wrong;
      }
    });
  }
  // Callback calls chained from the client's own thread, across 50 keys with limits of
  // their own, while the blocking threads run.
  ch.next = [&] {
    const int i = ch.issued++;
    if (i >= kChained) return;
    const int k = i % 50;
    c.take("reuse:chain:" + std::to_string(k), Limit::fixed_window(1000 + k, 3600000), 1,
           [&, k](floodgate::Result<floodgate::Decision> r) {
             if (!r.ok()) {
               ++errors;
             } else {
               const int nth = ++seen[k];  // this key's nth answer (one key's calls stay in order)
               if (r->limit != 1000 + k || r->remaining != 1000 + k - nth) ++wrong;
             }
             if (++ch.done == kChained) ch.all.set_value();
             ch.next();
           });
  };
  for (int i = 0; i < 64; ++i) ch.next();
  for (auto& th : threads) th.join();
  ASSERT_EQ(ch.all.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Native, CheckAllAdmitsOnlyWhenEveryLimitAllowsAndThenCountsEach) {
  NativeNode n;
  floodgate::Client c(n.options());
  const Limit user = Limit::token_bucket(10, 1, 3600000);
  const Limit room = Limit::fixed_window(3, 3600000);
  const Limit ip = Limit::sliding_log(5, 3600000);
  auto checks = [&] {
    return std::vector<floodgate::Check>{
        {"u:1", user, 1}, {"room:7", room, 1}, {"ip:10.0.0.1", ip, 1}};
  };
  for (int i = 0; i < 3; ++i) {
    auto m = c.check_all(checks());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_TRUE(m->allowed);
    ASSERT_EQ(m->decisions.size(), 3u);
  }
  // The room is full: the check is denied and neither the user nor the IP pays for it.
  for (int i = 0; i < 4; ++i) {
    auto m = c.check_all(checks());
    ASSERT_TRUE(m.ok());
    EXPECT_FALSE(m->allowed);
    EXPECT_GT(m->retry_after_ms, 0);
  }
  EXPECT_EQ(c.peek("u:1", user)->remaining, 7);
  EXPECT_EQ(c.peek("ip:10.0.0.1", ip)->remaining, 2);
  EXPECT_EQ(c.peek("room:7", room)->remaining, 0);
  // An error on one check (wrong kind) is an error, and also consumes nothing.
  ASSERT_TRUE(c.take("tb", Limit::token_bucket(3, 1, 1000)).ok());
  auto bad = c.check_all({{"u:1", user, 1}, {"tb", ip, 1}});
  EXPECT_EQ(bad.status(), Status::kWrongType);
  EXPECT_EQ(c.peek("u:1", user)->remaining, 7);
}

// A caller that dies after reserving and before committing: the node gives back what the
// reservations took when they expire. Spoken at the protocol level, so nothing commits.
TEST(Native, ReservationsOfACallerThatDiedComeBack) {
  NativeNode n;
  namespace pb = floodgate::native;
  {
    Client raw(n.native_port);
    ASSERT_TRUE(raw.connected());
    pb::ClientFrame f;
    f.set_version(1);
    pb::Request* r = f.add_requests();
    r->set_op(pb::RESERVE);
    r->set_key("room:9");
    r->mutable_limit()->set_kind(pb::FIXED_WINDOW);
    r->mutable_limit()->set_a(3);
    r->mutable_limit()->set_period_ms(3600000);
    r->set_cost(2);
    r->set_ttl_ms(300);
    const std::string body = f.SerializeAsString();
    std::string frame(4, '\0');
    frame[3] = static_cast<char>(body.size());
    ASSERT_TRUE(raw.send(frame + body));
    const std::string hdr = raw.recv_n(4);
    ASSERT_EQ(hdr.size(), 4u);
    const std::string reply = raw.recv_n(static_cast<size_t>(static_cast<unsigned char>(hdr[3])));
    pb::ServerFrame sf;
    ASSERT_TRUE(sf.ParseFromString(reply));
    ASSERT_EQ(sf.results_size(), 1);
    EXPECT_TRUE(sf.results(0).allowed());
    EXPECT_NE(sf.results(0).lease(), 0u);
  }  // the caller is gone
  floodgate::Client c(n.options());
  const Limit room = Limit::fixed_window(3, 3600000);
  EXPECT_EQ(c.peek("room:9", room)->remaining, 1);  // held by the reservation
  bool back = false;
  for (int i = 0; i < 40 && !back; ++i) {  // 300 ms TTL + one sweep (100 ms)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    back = c.peek("room:9", room)->remaining == 3;
  }
  EXPECT_TRUE(back);
}

TEST(Native, HolderKeepsLeasesAliveAndGivesThemBackOnShutdown) {
  NativeNode n;
  floodgate::Client c(n.options());
  const Limit conns = Limit::concurrency(5, 600);  // leases die 600 ms after their last renewal
  {
    floodgate::Holder h(c, "app-server-1", std::chrono::milliseconds(600));
    ASSERT_TRUE(h.acquire("conn:u", conns)->granted);
    ASSERT_TRUE(h.acquire("conn:u", conns)->granted);
    auto l = h.acquire("conn:v", conns);
    ASSERT_TRUE(l->granted);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the TTL, twice
    EXPECT_EQ(*c.count("conn:u"), 2);
    EXPECT_EQ(*c.count("conn:v"), 1);
    EXPECT_TRUE(*h.release(*l));
    EXPECT_EQ(*c.count("conn:v"), 0);
    EXPECT_EQ(h.failed_heartbeats(), 0u);
  }
  EXPECT_EQ(*c.count("conn:u"), 0);  // released at once, not after the TTL
}

TEST(Native, ABadFrameClosesOnlyThatConnection) {
  NativeNode n;
  floodgate::Client c(n.options());
  ASSERT_TRUE(c.take("a", Limit::token_bucket(3, 1, 1000)).ok());
  Client garbage(n.native_port);
  ASSERT_TRUE(garbage.send(std::string("\x00\x00\x00\x05\xff\xff\xff\xff\xff", 9)));
  const std::string reply = garbage.recv_all();
  EXPECT_NE(reply.find("ERR Protocol error"), std::string::npos);
  Client huge(n.native_port);
  ASSERT_TRUE(huge.send(std::string("\x7f\xff\xff\xff", 4)));
  EXPECT_NE(huge.recv_all().find("larger than 16 MiB"), std::string::npos);
  EXPECT_TRUE(c.take("a", Limit::token_bucket(3, 1, 1000)).ok());
  EXPECT_TRUE(n.node.alive());
}

TEST(Native, APasswordProtectedNodeNeedsItInTheHello) {
  const int np = free_port();
  NodeProcess node({"--native-port", std::to_string(np), "--requirepass", "s3cret"});
  ASSERT_TRUE(node.alive());
  floodgate::Client::Options o;
  o.seeds = {"127.0.0.1:" + std::to_string(np)};
  o.deadline = std::chrono::milliseconds(2000);
  {
    floodgate::Client anonymous(o);
    auto r = anonymous.take("k", Limit::token_bucket(3, 1, 1000));
    EXPECT_EQ(r.status(), Status::kNoAuth) << r.error();
  }
  {
    o.password = "wrong";
    floodgate::Client wrong(o);
    auto r = wrong.take("k", Limit::token_bucket(3, 1, 1000));
    EXPECT_EQ(r.status(), Status::kNoAuth);
    EXPECT_EQ(r.error(), "WRONGPASS invalid username-password pair or user is disabled.");
  }
  o.password = "s3cret";
  floodgate::Client good(o);
  auto r = good.take("k", Limit::token_bucket(3, 1, 1000));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->allowed);
}

// The hello's name is the client's lib-name in CLIENT LIST; Redis's rule for names (no
// spaces, newlines or special characters) holds for it, and a hello that breaks it or does
// not parse is not taken: the frame's requests say why.
TEST(Native, TheHellosNameFollowsRedisRulesForClientNames) {
  NativeNode n;
  {
    auto o = n.options();
    o.name = "billing api";
    floodgate::Client spaced(o);
    auto r = spaced.take("k", Limit::token_bucket(3, 1, 1000));
    EXPECT_EQ(r.status(), Status::kError);
    EXPECT_EQ(r.error(), "ERR Client names cannot contain spaces, newlines or special characters.");
  }
  auto o = n.options();
  o.name = "billing-api";
  floodgate::Client named(o);
  ASSERT_TRUE(named.take("k", Limit::token_bucket(3, 1, 1000)).ok());
  Client resp(n.node.port());
  EXPECT_NE(resp.request({"CLIENT", "LIST"}).find("lib-name=billing-api"), std::string::npos);
  // (each listed with its door: the native client's and the RESP one asking)
  EXPECT_NE(resp.request({"CLIENT", "LIST"}).find(" door=native"), std::string::npos);
  EXPECT_NE(resp.request({"CLIENT", "INFO"}).find(" door=resp"), std::string::npos);
  // CLIENT KILL DOOR native closes it; the client library connects again for its next.
  EXPECT_EQ(resp.request({"CLIENT", "KILL", "DOOR", "native"}), ":1");
  for (int i = 0; i < 50 && resp.request({"CLIENT", "LIST", "DOOR", "native"}) != ""; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(resp.request({"CLIENT", "LIST", "DOOR", "native"}), "");
  auto again = named.take("k", Limit::token_bucket(3, 1, 1000));
  EXPECT_TRUE(again.ok()) << again.error();
  {  // a client that gives no name is listed as the native library
    auto plain = n.options();
    plain.name.clear();
    floodgate::Client unnamed(plain);
    ASSERT_TRUE(unnamed.take("k2", Limit::token_bucket(3, 1, 1000)).ok());
    EXPECT_NE(resp.request({"CLIENT", "LIST"}).find("lib-name=floodgate-native"),
              std::string::npos);
  }

  // A hello that is not a Hello (field 2 of the frame holding a bad varint).
  floodgate::native::Request take;
  take.set_op(floodgate::native::PING);
  std::string body = std::string("\x12\x02\x08\xff", 4) + "\x1a";
  const std::string req = take.SerializeAsString();
  body += static_cast<char>(req.size());
  body += req;
  std::string frame(4, '\0');
  frame[3] = static_cast<char>(body.size());
  Client raw(n.native_port);
  ASSERT_TRUE(raw.send(frame + body));
  const std::string len = raw.recv_n(4);
  ASSERT_EQ(len.size(), 4u);
  floodgate::native::ServerFrame answer;
  ASSERT_TRUE(answer.ParseFromString(raw.recv_n(static_cast<unsigned char>(len[3]))));
  ASSERT_EQ(answer.results_size(), 1);
  EXPECT_EQ(answer.results(0).code(), floodgate::native::ERR);
  EXPECT_EQ(answer.results(0).error(), "ERR Protocol error: malformed hello");
  EXPECT_TRUE(named.take("k", Limit::token_bucket(3, 1, 1000)).ok());
}

// An allowed result's retry_after_ms is always -1. A client that says so in its hello
// (allowed_omits_retry) gets it left out, eleven bytes of each answer; any other client
// (an older library, a hand-written one) still gets it written. A denial's is written to
// both. floodgate::Client asks, and reads it back as -1 (Native.EveryRequestKind).
TEST(Native, AllowedResultsLeaveOutTheirRetryOnlyForClientsThatAskForIt) {
  NativeNode n;
  namespace pb = floodgate::native;
  // One frame: a hello (asking or not), a TAKE allowed, a TAKE denied (one a minute).
  auto exchange = [&](bool ask, const std::string& key) {
    pb::ClientFrame f;
    f.set_version(1);
    f.mutable_hello()->set_allowed_omits_retry(ask);
    for (int i = 0; i < 2; ++i) {
      pb::Request* r = f.add_requests();
      r->set_op(pb::TAKE);
      r->set_key(key);
      r->mutable_limit()->set_kind(pb::GCRA);
      r->mutable_limit()->set_b(1);  // (a = max_burst 0: one request a minute)
      r->mutable_limit()->set_period_ms(60000);
    }
    std::string frame;
    const size_t at = open_frame(frame);
    frame += f.SerializeAsString();
    close_frame(frame, at);
    Client raw(n.native_port);
    EXPECT_TRUE(raw.send(frame));
    const std::string len = raw.recv_n(4);
    pb::ServerFrame answer;
    EXPECT_EQ(len.size(), 4u);
    if (len.size() == 4) {
      EXPECT_TRUE(answer.ParseFromString(raw.recv_n(read_length(len.data()))));
    }
    return answer;
  };
  const pb::ServerFrame old_style = exchange(false, "omit:a");
  ASSERT_EQ(old_style.results_size(), 2);
  EXPECT_TRUE(old_style.results(0).allowed());
  EXPECT_EQ(old_style.results(0).retry_after_ms(), -1);
  EXPECT_FALSE(old_style.results(1).allowed());
  EXPECT_GT(old_style.results(1).retry_after_ms(), 0);

  const pb::ServerFrame asked = exchange(true, "omit:b");
  ASSERT_EQ(asked.results_size(), 2);
  EXPECT_TRUE(asked.results(0).allowed());
  EXPECT_EQ(asked.results(0).retry_after_ms(), 0);  // left out
  EXPECT_LT(asked.results(0).ByteSizeLong() + 10, old_style.results(0).ByteSizeLong());
  EXPECT_FALSE(asked.results(1).allowed());
  EXPECT_GT(asked.results(1).retry_after_ms(), 0);
}

TEST(Native, AHalfSentFrameIsDroppedAtTheQueryDeadline) {
  const int np = free_port();
  NodeProcess node({"--native-port", std::to_string(np), "--query-deadline-ms", "1000"});
  Client slow(np, 6000);
  ASSERT_TRUE(slow.send(std::string("\x00\x00\x01\x00\x08", 5)));  // 256 bytes promised, 1 sent
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.closed_by_peer());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(700));
  floodgate::Client::Options o;
  o.seeds = {"127.0.0.1:" + std::to_string(np)};
  floodgate::Client c(o);
  EXPECT_TRUE(c.take("k", Limit::token_bucket(3, 1, 1000)).ok());
}

TEST(Native, AnUnreachableClusterIsAnErrorAtTheDeadline) {
  floodgate::Client::Options o;
  o.seeds = {"127.0.0.1:" + std::to_string(free_port())};
  o.deadline = std::chrono::milliseconds(300);
  floodgate::Client c(o);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.take("k", Limit::token_bucket(3, 1, 1000));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status(), Status::kUnavailable);
  EXPECT_NE(r.error().find("Connection refused"), std::string::npos) << r.error();
  EXPECT_LT(took, std::chrono::milliseconds(2000));
}

TEST(Native, CliExitCodesAndOutput) {
  NativeNode n;
  const std::string cli =
      std::string(FLOODGATE_CLI) + " -s 127.0.0.1:" + std::to_string(n.native_port) + " ";
  EXPECT_EQ(run(cli + "take k token_bucket 1 1 60000"),
            "allowed limit=1 remaining=0 retry_after_ms=-1 reset_after_ms=60000\n");
  EXPECT_EQ(system((cli + "take k token_bucket 1 1 60000 >/dev/null").c_str()) >> 8, 1);
  EXPECT_EQ(system((cli + "take k nosuch >/dev/null 2>&1").c_str()) >> 8, 2);
  const std::string lease = run(cli + "acquire c concurrency 1 60000 --holder h");
  ASSERT_EQ(lease.rfind("granted lease=", 0), 0u) << lease;
  EXPECT_EQ(run(cli + "count c"), "1\n");
  EXPECT_EQ(run(cli + "release c " + lease.substr(14, 16)), "released\n");
  EXPECT_NE(run(cli + "cluster").find("standalone"), std::string::npos);
  const std::string bench = run(cli + "bench -q -c 1 -P 64 -d 0.5 -k 100");
  EXPECT_NE(bench.find("throughput:"), std::string::npos) << bench;
  EXPECT_NE(bench.find("p999"), std::string::npos);
  EXPECT_NE(bench.find("errors 0)"), std::string::npos) << bench;
}

}  // namespace
}  // namespace fg::testing
