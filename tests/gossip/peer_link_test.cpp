// Peer links over loopback TCP: calls answered in any order, batching, deadlines,
// unreachable peers, reconnects, and garbage on the server's port.
#include "peer_link.hpp"

#include <gtest/gtest.h>

#include "udp_transport.hpp"  // (wall_now_ns)

namespace fg {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  asio::io_context io;
  std::unique_ptr<PeerServer> server;
  std::vector<PeerServer::Respond> held;  // responses the test releases later

  void serve(uint16_t port = 0, BusKey* key = nullptr) {
    server = std::make_unique<PeerServer>(
        io, "127.0.0.1", port,
        [this](uint32_t kind, std::string body, PeerServer::Respond respond) {
          if (kind == 1) return respond(PeerStatus::kOk, "echo:" + body, "");
          if (kind == 2) return held.push_back(respond);  // answer later (or never)
          if (kind == 3) return respond(PeerStatus::kError, "", "no such thing");
          respond(PeerStatus::kUnknownKind, "", "");
        },
        key);
  }
  std::string addr() const { return "127.0.0.1:" + std::to_string(server->port()); }
  template <class Pred>
  bool run_until(Pred p, std::chrono::milliseconds max = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + max;
    while (!p() && std::chrono::steady_clock::now() < end) io.run_for(5ms);
    return p();
  }
};

TEST(PeerLink, CallsAreAnsweredAndBatched) {
  Fixture f;
  f.serve();
  auto client = std::make_shared<PeerClient>(f.io, f.addr());
  std::vector<std::string> got(200);
  int done = 0;
  for (int i = 0; i < 200; ++i) {
    client->call(1, std::to_string(i), 2000ms, [&, i](PeerStatus st, std::string body) {
      EXPECT_EQ(st, PeerStatus::kOk);
      got[i] = body;
      ++done;
    });
  }
  ASSERT_TRUE(f.run_until([&] { return done == 200; }));
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[i], "echo:" + std::to_string(i));
  EXPECT_LT(client->frames_sent(), 10u);  // 200 calls made at once travel in a few frames
}

TEST(PeerLink, LargeCallsSpreadOverFramesAndOneTooLargeFailsAlone) {
  Fixture f;
  f.serve();
  auto client = std::make_shared<PeerClient>(f.io, f.addr());
  // 12 calls of 10 MiB: 120 MiB in all, well past one frame's 64 MiB cap.
  int ok = 0;
  for (int i = 0; i < 12; ++i) {
    client->call(1, std::string(10 << 20, static_cast<char>('a' + i)), 20s,
                 [&ok, i](PeerStatus st, std::string body) {
                   if (st == PeerStatus::kOk && body.size() == (10u << 20) + 5 &&
                       body[5] == static_cast<char>('a' + i)) {
                     ++ok;
                   }
                 });
  }
  // One call no frame can carry fails by itself; the link keeps working.
  PeerStatus big = PeerStatus::kOk;
  bool big_done = false;
  client->call(1, std::string(kMaxPeerFrameBytes, 'x'), 20s, [&](PeerStatus st, std::string) {
    big = st;
    big_done = true;
  });
  std::string after;
  client->call(1, "after", 20s, [&](PeerStatus, std::string b) { after = b; });
  ASSERT_TRUE(f.run_until([&] { return ok == 12 && big_done && !after.empty(); }, 20000ms));
  EXPECT_EQ(big, PeerStatus::kError);
  EXPECT_EQ(after, "echo:after");
  EXPECT_GE(client->frames_sent(), 3u);
}

TEST(PeerLink, ErrorsAndUnknownKinds) {
  Fixture f;
  f.serve();
  auto client = std::make_shared<PeerClient>(f.io, f.addr());
  PeerStatus a{}, b{};
  std::string why;
  client->call(3, "", 2000ms, [&](PeerStatus st, std::string body) { a = st, why = body; });
  client->call(99, "", 2000ms, [&](PeerStatus st, std::string) { b = st; });
  ASSERT_TRUE(f.run_until([&] { return b == PeerStatus::kUnknownKind; }));
  EXPECT_EQ(a, PeerStatus::kError);
  EXPECT_EQ(why, "no such thing");
}

TEST(PeerLink, DeadlineExpiresAndALateAnswerIsIgnored) {
  Fixture f;
  f.serve();
  auto client = std::make_shared<PeerClient>(f.io, f.addr());
  int calls = 0;
  PeerStatus st{};
  client->call(2, "slow", 100ms, [&](PeerStatus s, std::string) { st = s, ++calls; });
  ASSERT_TRUE(f.run_until([&] { return calls == 1; }));
  EXPECT_EQ(st, PeerStatus::kTimeout);
  ASSERT_EQ(f.held.size(), 1u);
  f.held[0](PeerStatus::kOk, "too late", "");
  f.io.run_for(100ms);
  EXPECT_EQ(calls, 1);  // the callback ran exactly once
}

TEST(PeerLink, UnreachablePeerFailsFastAndReconnectsLater) {
  Fixture f;
  f.serve();
  const uint16_t port = f.server->port();
  f.server->close();
  f.server.reset();
  auto client = std::make_shared<PeerClient>(f.io, "127.0.0.1:" + std::to_string(port));
  PeerStatus st{};
  bool answered = false;
  const auto t0 = std::chrono::steady_clock::now();
  client->call(1, "x", 5000ms, [&](PeerStatus s, std::string) { st = s, answered = true; });
  ASSERT_TRUE(f.run_until([&] { return answered; }));
  EXPECT_EQ(st, PeerStatus::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);  // not after the deadline
  // The peer comes back on the same port; after the backoff, calls succeed again.
  f.serve(port);
  bool ok = false;
  ASSERT_TRUE(f.run_until([&] {
    if (!ok)
      client->call(1, "y", 1000ms,
                   [&](PeerStatus s, std::string) { ok = ok || s == PeerStatus::kOk; });
    f.io.run_for(100ms);
    return ok;
  }));
}

TEST(PeerLink, GarbageOnTheServerPortIsRefusedAndOthersAreServed) {
  Fixture f;
  f.serve();
  asio::ip::tcp::socket raw(f.io);
  raw.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.server->port()));
  asio::write(raw, asio::buffer(std::string("\x00\x00\x00\x05hello\xff\xff\xff\xff", 13)));
  auto client = std::make_shared<PeerClient>(f.io, f.addr());
  std::string body;
  client->call(1, "fine", 2000ms, [&](PeerStatus, std::string b) { body = b; });
  ASSERT_TRUE(f.run_until([&] { return !body.empty(); }));
  EXPECT_EQ(body, "echo:fine");
}

// With the cluster secret, a link carries calls only between holders of it: a client
// without it, or with another, gets nothing served; a server without it is not trusted by
// a client that has it; refusals are counted on the side that refused.
TEST(PeerLink, OnlyHoldersOfTheClusterSecretTalk) {
  auto make_key = [](const std::string& secret) {
    auto k = std::make_unique<BusKey>([] { return wall_now_ns() / 1'000'000; });
    std::string why;
    if (!secret.empty()) {
      EXPECT_TRUE(k->set({secret}, why)) << why;
    }
    return k;
  };
  auto server_key = make_key("the-secret-of-this-cluster");
  auto same = make_key("the-secret-of-this-cluster");
  auto other = make_key("some-other-secret-entirely");
  auto none = make_key("");
  auto call = [](Fixture& f, BusKey* key) {
    auto client = std::make_shared<PeerClient>(f.io, f.addr(), "", key);
    PeerStatus got = PeerStatus::kTimeout;
    bool done = false;
    client->call(1, "hi", 3000ms, [&](PeerStatus st, std::string) {
      got = st;
      done = true;
    });
    EXPECT_TRUE(f.run_until([&] { return done; }));
    client->close();
    return got;
  };
  Fixture f;
  f.serve(0, server_key.get());
  EXPECT_EQ(call(f, same.get()), PeerStatus::kOk);
  EXPECT_NE(call(f, other.get()), PeerStatus::kOk);
  EXPECT_NE(call(f, none.get()), PeerStatus::kOk);
  f.run_until([&] { return server_key->counters().refused_peer.load() >= 2; });
  EXPECT_EQ(server_key->counters().refused_peer.load(), 2u);
  Fixture open;
  open.serve();  // (no secret: it cannot prove it holds one)
  EXPECT_NE(call(open, same.get()), PeerStatus::kOk);

  // A forged hello (the right secret's id, which travels in the clear, with a made-up MAC
  // or an altered nonce) is refused.
  std::string forged = same->peer_hello();
  forged[40] = static_cast<char>(forged[40] ^ 1);
  EXPECT_FALSE(server_key->peer_answer(forged).has_value());
  forged = same->peer_hello();
  forged[10] = static_cast<char>(forged[10] ^ 1);
  EXPECT_FALSE(server_key->peer_answer(forged).has_value());
  // A hello is believed once: one recorded off the wire and sent again is refused.
  const std::string hello = same->peer_hello();
  EXPECT_TRUE(server_key->peer_answer(hello).has_value());
  EXPECT_FALSE(server_key->peer_answer(hello).has_value());
  const auto proof = make_key("the-secret-of-this-cluster")->peer_answer(hello);
  ASSERT_TRUE(proof.has_value());
  EXPECT_TRUE(same->peer_proven(hello, *proof));
  EXPECT_FALSE(other->peer_proven(hello, *proof));
}

}  // namespace
}  // namespace fg
