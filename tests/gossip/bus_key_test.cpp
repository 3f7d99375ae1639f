// The cluster secret on gossip: sealing and opening, what is refused (another secret, an
// altered byte, no seal, a replay, a stale or future clock), rotation with two secrets, and
// real UDP membership where a node without the secret is never believed.
#include "bus_key.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>

#include "membership.hpp"
#include "udp_transport.hpp"

namespace fg {
namespace {

const std::string kA = "first-secret-0123456789";
const std::string kB = "second-secret-0123456789";

struct Keyed {
  int64_t now = 1'700'000'000'000;
  BusKey key{[this] { return now; }};
  explicit Keyed(std::vector<std::string> secrets) { EXPECT_TRUE(key.set(secrets).ok()); }
};

TEST(BusKey, OpensWhatItsSecretSealedAndNothingElse) {
  Keyed a({kA}), b({kA}), other({kB});
  const std::string d = a.key.seal("hello gossip");
  ASSERT_NE(d.find("hello gossip"), std::string::npos);  // (sealed, not encrypted)
  const auto p = b.key.open(d);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, "hello gossip");

  EXPECT_FALSE(other.key.open(a.key.seal("x")).has_value());
  EXPECT_EQ(other.key.counters().refused_bad_mac.load(), 1u);
  std::string altered = a.key.seal("pay 10");
  altered[altered.find("10")] = '9';
  EXPECT_FALSE(b.key.open(altered).has_value());
  EXPECT_EQ(b.key.counters().refused_bad_mac.load(), 1u);
  EXPECT_FALSE(b.key.open("plain gossip, no seal").has_value());
  EXPECT_FALSE(b.key.open("").has_value());
  EXPECT_EQ(b.key.counters().refused_unsealed.load(), 2u);
}

TEST(BusKey, ARecordedDatagramIsNotBelievedTwice) {
  Keyed a({kA}), b({kA});
  const std::string d1 = a.key.seal("1"), d2 = a.key.seal("2"), d3 = a.key.seal("3");
  EXPECT_TRUE(b.key.open(d3).has_value());
  EXPECT_TRUE(b.key.open(d1).has_value());  // (UDP reorders: an older one, not yet seen)
  EXPECT_FALSE(b.key.open(d1).has_value());
  EXPECT_FALSE(b.key.open(d3).has_value());
  EXPECT_TRUE(b.key.open(d2).has_value());
  EXPECT_EQ(b.key.counters().refused_replay.load(), 2u);
  // More than 64 behind the newest: refused (it could not be told apart from a replay).
  const std::string old = a.key.seal("old");
  for (int i = 0; i < 70; ++i) ASSERT_TRUE(b.key.open(a.key.seal("n")).has_value());
  EXPECT_FALSE(b.key.open(old).has_value());
}

TEST(BusKey, AStaleOrFutureClockIsRefused) {
  Keyed a({kA}), b({kA});
  a.now = b.now - BusKey::kWindowMs - 1000;
  EXPECT_FALSE(b.key.open(a.key.seal("late")).has_value());
  a.now = b.now + BusKey::kWindowMs + 1000;
  EXPECT_FALSE(b.key.open(a.key.seal("early")).has_value());
  EXPECT_EQ(b.key.counters().refused_stale.load(), 2u);
  a.now = b.now + BusKey::kWindowMs - 1000;  // (within the window: clocks differ a little)
  EXPECT_TRUE(b.key.open(a.key.seal("fine")).has_value());
}

TEST(BusKey, TwoSecretsRotateWithoutALoss) {
  // Step 1: every node accepts the new secret, still sealing with the old one.
  Keyed old_only({kA}), step1({kA, kB}), step2({kB, kA}), new_only({kB});
  EXPECT_TRUE(step1.key.open(old_only.key.seal("x")).has_value());
  EXPECT_TRUE(old_only.key.open(step1.key.seal("x")).has_value());
  // Step 2: every node seals with the new one, still accepting the old.
  EXPECT_TRUE(step1.key.open(step2.key.seal("x")).has_value());
  EXPECT_TRUE(step2.key.open(step1.key.seal("x")).has_value());
  // Step 3: the old one is gone.
  EXPECT_TRUE(step2.key.open(new_only.key.seal("x")).has_value());
  EXPECT_TRUE(new_only.key.open(step2.key.seal("x")).has_value());
  EXPECT_FALSE(new_only.key.open(old_only.key.seal("x")).has_value());
  // Peer links likewise, each round's nodes with the last round's and the next's: the hello
  // names the secret it was made with, the answer and the frame keys use that one.
  auto link = [](Keyed& from, Keyed& to) {
    PeerFrameKeys client, server;
    const std::string hello = from.key.peer_hello("b:16380");
    const auto answer = to.key.peer_answer(hello, &server);
    if (!answer || !from.key.peer_proven(hello, *answer, &client)) return false;
    std::string tag;
    client.tag("frame", tag);
    return server.check("frame", tag);
  };
  Keyed* rounds[] = {&old_only, &step1, &step2, &new_only};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(link(*rounds[i], *rounds[i + 1])) << i;
    EXPECT_TRUE(link(*rounds[i + 1], *rounds[i])) << i;
  }
  EXPECT_FALSE(link(old_only, new_only));
}

// A peer link's frames: each direction has its own key and numbers its frames, so a frame
// replayed, reordered, sent back the other way or moved to another link does not check.
TEST(BusKey, FrameTagsHoldToTheirLinkDirectionAndOrder) {
  Keyed a({kA}), b({kA});
  b.key.set_names({"b:16380"});
  auto handshake = [&](PeerFrameKeys& client, PeerFrameKeys& server) {
    const std::string hello = a.key.peer_hello("b:16380");
    const auto answer = b.key.peer_answer(hello, &server);
    ASSERT_TRUE(answer.has_value());
    ASSERT_TRUE(a.key.peer_proven(hello, *answer, &client));
  };
  PeerFrameKeys client, server, client2, server2;
  handshake(client, server);
  handshake(client2, server2);
  std::string t1, t2;
  client.tag("first", t1);
  client.tag("second", t2);
  EXPECT_FALSE(server.check("second", t2));  // (out of order)
  EXPECT_FALSE(server2.check("first", t1));  // (another link)
  EXPECT_FALSE(client.check("first", t1));   // (sent back the other way)
  EXPECT_FALSE(server.check("first!", t1));  // (altered)
  EXPECT_TRUE(server.check("first", t1));
  EXPECT_FALSE(server.check("first", t1));  // (replayed)
  EXPECT_TRUE(server.check("second", t2));
  // And a hello names its receiver: another node refuses it.
  Keyed c({kA});
  c.key.set_names({"c:16380"});
  EXPECT_FALSE(c.key.peer_answer(a.key.peer_hello("b:16380"), nullptr).has_value());
  EXPECT_TRUE(c.key.peer_answer(a.key.peer_hello("c:16380"), nullptr).has_value());
}

// A frame's tag is the first 16 bytes of HMAC-SHA256(its direction's key, its number on
// the link as 8 big-endian bytes || its payload), frame after frame (the context that
// makes it is keyed once: it must not lose the key between frames).
TEST(BusKey, AFrameTagIsTheHmacOfItsNumberAndPayload) {
  const std::string key = "a key for one direction of one link";
  auto expected = [&key](uint64_t n, const std::string& payload) {
    std::string in(8, '\0');
    for (int i = 0; i < 8; ++i) in[i] = static_cast<char>(n >> (56 - 8 * i));
    in += payload;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(in.data()), in.size(), md, &len);
    return std::string(reinterpret_cast<const char*>(md), 16);
  };
  PeerFrameKeys sender, receiver;
  sender.set(key, "the other direction's key");
  receiver.set("the other direction's key", key);
  for (uint64_t n = 0; n < 3; ++n) {
    const std::string payload = "frame " + std::to_string(n);
    std::string tag;
    sender.tag(payload, tag);
    EXPECT_EQ(tag, expected(n, payload)) << n;
    EXPECT_TRUE(receiver.check(payload, tag)) << n;
  }
}

TEST(BusKey, SecretsAreCheckedAndReadFromAFile) {
  BusKey k([] { return int64_t{0}; });
  EXPECT_FALSE(k.set({}).ok());
  const Status short_one = k.set({"short"});
  EXPECT_NE(short_one.error().find("at least 16"), std::string::npos) << short_one.error();
  EXPECT_FALSE(k.set({kA, kB, kA}).ok());
  EXPECT_FALSE(k.active());
  const std::string path = ::testing::TempDir() + "bus.secret";
  std::ofstream(path) << "  " << kA << "  \n\n" << kB << "\n";
  const auto s = BusKey::read_file(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{kA, kB}));
  EXPECT_FALSE(BusKey::read_file(path + ".missing").ok());
}

struct UdpNode {
  UdpNode(asio::io_context& io, int i, const std::string& secret)
      : key([] { return wall_now_ns() / 1'000'000; }),
        transport(
            io, "127.0.0.1", 0,
            [this](const std::string& from, std::string_view b) {
              if (member) member->receive(from, b, wall_now_ns());
            },
            &key) {
    if (!secret.empty()) {
      EXPECT_TRUE(key.set({secret}).ok());
    }
    member = std::make_unique<Membership>(MembershipConfig{}, "bus-" + std::to_string(i),
                                          transport.local_addr(), "127.0.0.1:0", transport, i);
    runner = std::make_unique<MembershipRunner>(io, *member);
  }
  BusKey key;
  UdpTransport transport;
  std::unique_ptr<Membership> member;
  std::unique_ptr<MembershipRunner> runner;
};

// Three nodes share the secret; a fourth has another, a fifth none. Both try to join
// through the same seed: nobody believes them, and the three see only each other.
TEST(BusKey, OnlyNodesWithTheSecretBecomeMembers) {
  asio::io_context io;
  std::vector<std::unique_ptr<UdpNode>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(std::make_unique<UdpNode>(io, i, kA));
  nodes.push_back(std::make_unique<UdpNode>(io, 3, kB));
  nodes.push_back(std::make_unique<UdpNode>(io, 4, ""));
  const std::string seed = nodes[0]->transport.local_addr();
  for (auto& n : nodes) n->runner->start({seed});
  auto members = [&](size_t i) { return nodes[i]->member->others().size(); };
  for (int waited = 0; waited < 3000; waited += 20) io.run_for(std::chrono::milliseconds(20));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(members(i), 2u) << "node " << i;
    for (const auto& [id, m] : nodes[i]->member->others()) {
      EXPECT_EQ(m.state, MemberState::kAlive) << id;
      EXPECT_TRUE(id == "bus-0" || id == "bus-1" || id == "bus-2") << id;
    }
  }
  EXPECT_EQ(members(3), 0u);
  EXPECT_EQ(members(4), 0u);
  const BusCounters& c = nodes[0]->key.counters();
  EXPECT_GT(c.refused_bad_mac.load(), 0u);   // the other secret
  EXPECT_GT(c.refused_unsealed.load(), 0u);  // no secret at all
}

}  // namespace
}  // namespace fg
