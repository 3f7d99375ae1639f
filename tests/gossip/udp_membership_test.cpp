// Membership over real UDP sockets on 127.0.0.1, in real time: join through a seed,
// detect a node that stops answering, survive garbage datagrams. Bounded to seconds.
#include <gtest/gtest.h>

#include <thread>

#include "membership.hpp"
#include "udp_transport.hpp"

namespace fg {
namespace {

struct UdpNode {
  UdpNode(asio::io_context& io, int i)
      : transport(io, "127.0.0.1", 0, [this](const std::string& from, std::string_view b) {
          if (member) member->receive(from, b, wall_now_ns());
        }) {
    member = std::make_unique<Membership>(MembershipConfig{}, "udp-" + std::to_string(i),
                                          transport.local_addr(), "127.0.0.1:0", transport, i);
    runner = std::make_unique<MembershipRunner>(io, *member);
  }
  UdpTransport transport;
  std::unique_ptr<Membership> member;
  std::unique_ptr<MembershipRunner> runner;
};

bool all_see(std::vector<std::unique_ptr<UdpNode>>& nodes, size_t subject, MemberState st,
             size_t skip = SIZE_MAX) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == subject || i == skip) continue;
    auto& o = nodes[i]->member->others();
    auto it = o.find(nodes[subject]->member->self().id);
    if (it == o.end() || it->second.state != st) return false;
  }
  return true;
}

TEST(UdpMembership, JoinsAndDetectsAStoppedNode) {
  asio::io_context io;
  std::vector<std::unique_ptr<UdpNode>> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(std::make_unique<UdpNode>(io, i));
  const std::string seed = nodes[0]->transport.local_addr();
  for (auto& n : nodes) n->runner->start({seed});
  auto run_until = [&](auto pred, int max_ms) {
    for (int waited = 0; waited < max_ms; waited += 20) {
      io.run_for(std::chrono::milliseconds(20));
      if (pred()) return waited;
    }
    return -1;
  };
  const int joined = run_until(
      [&] {
        for (size_t s = 0; s < nodes.size(); ++s)
          if (!all_see(nodes, s, MemberState::kAlive)) return false;
        return true;
      },
      5000);
  ASSERT_GE(joined, 0) << "no convergence within 5 s";

  // Garbage on the wire changes nothing.
  asio::ip::udp::socket junk(io, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto ep =
      *asio::ip::udp::resolver(io).resolve("127.0.0.1", seed.substr(seed.rfind(':') + 1)).begin();
  for (const char* g : {"\xff\xff\xff", "hello", ""}) junk.send_to(asio::buffer(g, strlen(g)), ep);

  nodes[3]->runner->stop();
  nodes[3]->transport.close();
  const int detected = run_until([&] { return all_see(nodes, 3, MemberState::kDead, 3); }, 10000);
  EXPECT_GE(detected, 0) << "stopped node not declared dead within 10 s";
  EXPECT_TRUE(all_see(nodes, 1, MemberState::kAlive, 3));
  std::printf("udp loopback: converged in %d ms, stopped node dead at all others in %d ms\n",
              joined, detected);
  for (auto& n : nodes) n->runner->stop();
}

}  // namespace
}  // namespace fg
