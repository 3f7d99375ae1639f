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
    if (!secret.empty()) {
      EXPECT_TRUE(k->set({secret}).ok());
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
  const std::string me = f.addr();
  std::string forged = same->peer_hello(me);
  forged[50] = static_cast<char>(forged[50] ^ 1);
  EXPECT_FALSE(server_key->peer_answer(forged, nullptr).has_value());
  forged = same->peer_hello(me);
  forged[10] = static_cast<char>(forged[10] ^ 1);
  EXPECT_FALSE(server_key->peer_answer(forged, nullptr).has_value());
  // A hello is believed once: one recorded off the wire and sent again is refused.
  const std::string hello = same->peer_hello(me);
  EXPECT_TRUE(server_key->peer_answer(hello, nullptr).has_value());
  EXPECT_FALSE(server_key->peer_answer(hello, nullptr).has_value());
  const auto answer = make_key("the-secret-of-this-cluster")->peer_answer(hello, nullptr);
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(same->peer_proven(hello, *answer, nullptr));
  EXPECT_FALSE(other->peer_proven(hello, *answer, nullptr));
}

// A man in the middle on the bus network: forwards one connection at a time to `upstream`,
// records what the connecting side sent, and may change a byte of it on the way.
struct Tap {
  asio::ip::tcp::acceptor acceptor;
  asio::ip::tcp::endpoint upstream;
  std::string sent;        // by the connecting side, as it left it
  int64_t flip_at = -1;    // that byte of the connecting side's stream, altered in passing
  std::string only_magic;  // hang up on a connecting side whose first bytes differ (an old node)
  Tap(asio::io_context& io, uint16_t upstream_port)
      : acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}),
        upstream(asio::ip::make_address("127.0.0.1"), upstream_port) {
    accept();
  }
  std::string addr() const {
    return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }
  void accept() {
    acceptor.async_accept([this](asio::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      auto client = std::make_shared<asio::ip::tcp::socket>(std::move(s));
      auto server = std::make_shared<asio::ip::tcp::socket>(acceptor.get_executor());
      server->async_connect(upstream, [this, client, server](asio::error_code e) {
        if (e) return;
        auto first = std::make_shared<std::string>();  // (this connection's first bytes)
        pump(client, server, first);
        pump(server, client, nullptr);
      });
      accept();
    });
  }
  // `first`: set for the connecting side's direction.
  void pump(std::shared_ptr<asio::ip::tcp::socket> a, std::shared_ptr<asio::ip::tcp::socket> b,
            std::shared_ptr<std::string> first) {
    auto buf = std::make_shared<std::array<char, 4096>>();
    a->async_read_some(asio::buffer(*buf), [=](asio::error_code ec, size_t n) {
      asio::error_code ignored;
      if (ec) {
        b->shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        return;
      }
      std::string chunk(buf->data(), n);
      if (first) {
        const size_t at = sent.size();
        sent += chunk;
        if (first->size() < 4) first->append(chunk.substr(0, 4 - first->size()));
        if (!only_magic.empty() && first->size() == 4 && *first != only_magic) {
          a->close(ignored);
          b->close(ignored);
          return;
        }
        if (flip_at >= static_cast<int64_t>(at) && flip_at < static_cast<int64_t>(at + n)) {
          chunk[static_cast<size_t>(flip_at) - at] ^= 1;
        }
      }
      auto out = std::make_shared<std::string>(std::move(chunk));
      asio::async_write(*b, asio::buffer(*out), [=](asio::error_code e, size_t) {
        if (!e) pump(a, b, first);
      });
    });
  }
};

std::unique_ptr<BusKey> secret_key(const std::string& secret = "the-secret-of-this-cluster") {
  auto k = std::make_unique<BusKey>([] { return wall_now_ns() / 1'000'000; });
  EXPECT_TRUE(k->set({secret}).ok());
  return k;
}

PeerStatus one_call(Fixture& f, const std::string& addr, BusKey* key, std::string body = "hi") {
  auto client = std::make_shared<PeerClient>(f.io, addr, "", key);
  PeerStatus got = PeerStatus::kTimeout;
  bool done = false;
  client->call(1, std::move(body), 2000ms, [&](PeerStatus st, std::string) {
    got = st;
    done = true;
  });
  EXPECT_TRUE(f.run_until([&] { return done; }));
  client->close();
  return got;
}

// Writes `bytes` to the server at `port` as a connection of its own and reads what comes
// back until the server hangs up (or a second passes).
std::string replay(asio::io_context& io, uint16_t port, const std::string& bytes) {
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(s, asio::buffer(bytes));
  std::string got;
  std::array<char, 4096> buf{};
  asio::error_code ec;
  bool closed = false;
  const auto end = std::chrono::steady_clock::now() + 1s;
  s.non_blocking(true);
  while (!closed && std::chrono::steady_clock::now() < end) {
    io.run_for(5ms);
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec == asio::error::would_block) continue;
    if (ec) closed = true;
    got.append(buf.data(), n);
  }
  return got;
}

// The bus replay, with bytes captured off the wire: a hello and a call recorded on their
// way to node A are refused by node B (the hello names A), by A itself (the nonce was
// believed once), and by A restarted with nothing remembered (its answer's fresh nonce gives
// the recorded frames keys they were not tagged with): the call never runs.
TEST(PeerLink, CapturedBytesReplayedToAnyNodeRunNothing) {
  Fixture a, b, a_again;
  auto key_a = secret_key(), key_b = secret_key(), key_a_again = secret_key(),
       key_client = secret_key();
  int ran = 0;
  auto serve = [&ran](Fixture& f, BusKey* key) {
    f.server = std::make_unique<PeerServer>(
        f.io, "127.0.0.1", 0,
        [&ran](uint32_t, std::string body, PeerServer::Respond respond) {
          ++ran;
          respond(PeerStatus::kOk, "ran:" + body, "");
        },
        key);
  };
  serve(a, key_a.get());
  serve(b, key_b.get());
  serve(a_again, key_a_again.get());
  Tap tap(a.io, a.server->port());  // (A as the other nodes reach it: through the tap)
  key_a->set_names({tap.addr()});
  key_a_again->set_names({tap.addr()});
  key_b->set_names({b.addr()});

  ASSERT_EQ(one_call(a, tap.addr(), key_client.get(), "reset every key"), PeerStatus::kOk);
  ASSERT_EQ(ran, 1);
  const std::string captured = tap.sent;
  ASSERT_GT(captured.size(), BusKey::kHelloBytes + 4);

  const uint64_t refused_b = key_b->counters().refused_peer;
  EXPECT_EQ(replay(b.io, b.server->port(), captured), "");  // no answer: hung up on
  EXPECT_EQ(key_b->counters().refused_peer, refused_b + 1);
  EXPECT_EQ(replay(a.io, a.server->port(), captured), "");
  const std::string answered = replay(a_again.io, a_again.server->port(), captured);
  EXPECT_EQ(answered.size(), BusKey::kAnswerBytes);  // the hello, believed; the frame, not
  a_again.io.run_for(50ms);
  EXPECT_EQ(ran, 1);
  EXPECT_GE(key_a_again->counters().refused_peer.load(), 1u);
}

// Every frame after the handshake carries a tag under the link's keys: one byte altered on
// the way, and the receiver hangs up instead of running it.
TEST(PeerLink, AFrameAlteredOnTheWayIsNotRun) {
  Fixture f;
  auto server_key = secret_key(), client_key = secret_key();
  std::vector<std::string> ran;
  f.server = std::make_unique<PeerServer>(
      f.io, "127.0.0.1", 0,
      [&ran](uint32_t, std::string body, PeerServer::Respond respond) {
        ran.push_back(body);
        respond(PeerStatus::kOk, body, "");
      },
      server_key.get());
  Tap tap(f.io, f.server->port());
  server_key->set_names({tap.addr()});
  tap.flip_at = static_cast<int64_t>(BusKey::kHelloBytes + 4 + 20);  // inside the first frame
  EXPECT_NE(one_call(f, tap.addr(), client_key.get(), "take 1 of app:x"), PeerStatus::kOk);
  EXPECT_TRUE(ran.empty());
  EXPECT_GE(server_key->counters().refused_peer.load(), 1u);
  tap.flip_at = -1;  // (and untouched, the same call runs)
  EXPECT_EQ(one_call(f, tap.addr(), client_key.get(), "take 1 of app:x"), PeerStatus::kOk);
  EXPECT_EQ(ran, std::vector<std::string>{"take 1 of app:x"});
}

// Rotation: once a node drops the secret a link was keyed with, that link takes no more
// frames from it; the next connection proves a secret both hold now.
TEST(PeerLink, ALinkKeyedWithASecretRotatedOutTakesNoMoreFrames) {
  Fixture f;
  auto server_key = secret_key("the-first-secret-of-many"),
       client_key = secret_key("the-first-secret-of-many");
  int ran = 0;
  f.server = std::make_unique<PeerServer>(
      f.io, "127.0.0.1", 0,
      [&ran](uint32_t, std::string body, PeerServer::Respond respond) {
        ++ran;
        respond(PeerStatus::kOk, body, "");
      },
      server_key.get());
  auto client = std::make_shared<PeerClient>(f.io, f.addr(), "", client_key.get());
  auto call = [&] {
    PeerStatus got = PeerStatus::kTimeout;
    bool done = false;
    client->call(1, "hi", 1000ms, [&](PeerStatus st, std::string) {
      got = st;
      done = true;
    });
    f.run_until([&] { return done; });
    return got;
  };
  ASSERT_EQ(call(), PeerStatus::kOk);
  ASSERT_TRUE(server_key->set({"the-next-secret-of-many", "the-first-secret-of-many"}).ok());
  EXPECT_EQ(call(), PeerStatus::kOk);  // (still held: the link goes on)
  ASSERT_TRUE(server_key->set({"the-next-secret-of-many"}).ok());
  EXPECT_NE(call(), PeerStatus::kOk);
  EXPECT_EQ(ran, 2);
  ASSERT_TRUE(client_key->set({"the-next-secret-of-many"}).ok());
  PeerStatus st = PeerStatus::kTimeout;
  for (int i = 0; i < 40 && st != PeerStatus::kOk; ++i) {  // (past the client's backoff)
    st = call();
    if (st != PeerStatus::kOk) f.io.run_for(50ms);
  }
  EXPECT_EQ(st, PeerStatus::kOk);
  EXPECT_EQ(ran, 3);
  client->close();
}

// During a rolling upgrade (cluster-bus-legacy) a node speaks the previous handshake to a
// peer that hangs up on the current one, and believes a previous-version hello; without the
// setting it does neither.
TEST(PeerLink, ThePreviousHandshakeOnlyWithClusterBusLegacy) {
  Fixture f;
  auto server_key = secret_key(), client_key = secret_key();
  f.serve(0, server_key.get());
  Tap old_node(f.io, f.server->port());
  old_node.only_magic = "FGP1";  // (what a node of the previous version reads)
  EXPECT_NE(one_call(f, old_node.addr(), client_key.get()), PeerStatus::kOk);
  server_key->set_legacy(true);
  client_key->set_legacy(true);
  // The first attempt is hung up on, the next speaks the old handshake.
  auto client = std::make_shared<PeerClient>(f.io, old_node.addr(), "", client_key.get());
  PeerStatus got = PeerStatus::kTimeout;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (got != PeerStatus::kOk && std::chrono::steady_clock::now() < end) {
    bool done = false;
    client->call(1, "hi", 1000ms, [&](PeerStatus st, std::string) {
      got = st;
      done = true;
    });
    f.run_until([&] { return done; });
    if (got != PeerStatus::kOk) f.io.run_for(100ms);
  }
  EXPECT_EQ(got, PeerStatus::kOk);
  client->close();
  // Unit by unit: an old hello is answered only with the setting.
  const std::string old_hello = client_key->peer_hello(f.addr(), true);
  ASSERT_EQ(old_hello.size(), BusKey::kLegacyHelloBytes);
  EXPECT_EQ(server_key->hello_bytes(old_hello.substr(0, 4)), BusKey::kLegacyHelloBytes);
  server_key->set_legacy(false);
  EXPECT_EQ(server_key->hello_bytes(old_hello.substr(0, 4)), 0u);
  EXPECT_FALSE(server_key->peer_answer(old_hello, nullptr).has_value());
}

}  // namespace
}  // namespace fg
