// The gateway door's translation without gRPC: a RateLimitRequest's descriptors into the
// core's requests, and outcomes into upstream's statuses, limits and headers.
#include "rls_translate.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "clock.hpp"
#include "command_table.hpp"
#include "policy_registry.hpp"
#include "services.hpp"

namespace fg {
namespace {

namespace rls = envoy::service::ratelimit::v3;

struct Door {
  ManualClock clock;
  PolicyRegistry policies;
  AclBook acl{acl_catalog(), clock};
  Services svc;
  std::string path;
  std::unique_ptr<RlsRules> rules;
  std::unique_ptr<RlsTranslator> translate;

  explicit Door(const std::string& yaml) {
    svc.clock = &clock;
    svc.policies = &policies;
    svc.acl = &acl;
    path = (std::filesystem::temp_directory_path() /
            ("rls-translate-" + std::to_string(::getpid()) + ".yaml"))
               .string();
    std::ofstream(path) << yaml;
    rules = std::make_unique<RlsRules>(path);
    const Status st = rules->reload();
    EXPECT_TRUE(st.ok()) << st.error();
    translate = std::make_unique<RlsTranslator>(svc, *rules, "default", true,
                                                std::make_shared<RlsKeys>(1000));
  }
  ~Door() { std::filesystem::remove(path); }
};

void add(rls::RateLimitRequest& r, std::vector<std::pair<std::string, std::string>> entries) {
  auto* d = r.add_descriptors();
  for (auto& [k, v] : entries) {
    auto* e = d->add_entries();
    e->set_key(k);
    e->set_value(v);
  }
}

// A call of domain "api" with these descriptors, and where its response goes.
using Descriptor = std::vector<std::pair<std::string, std::string>>;
struct Call {
  RlsCallState state;
  rls::RateLimitResponse response;
  explicit Call(const std::vector<Descriptor>& descriptors) {
    state.response = &response;
    state.request.set_domain("api");
    for (const auto& d : descriptors) add(state.request, d);
  }
};

constexpr const char* kRules =
    "domain: api\n"
    "descriptors:\n"
    "  - key: user\n"
    "    rate_limit: {unit: minute, requests_per_unit: 2}\n"
    "  - key: path\n"
    "    value: /free\n"
    "    rate_limit: {unlimited: true}\n"
    "  - key: blocked\n"
    "    rate_limit: {unit: second, requests_per_unit: 0}\n";

TEST(RlsTranslate, DescriptorsBecomeTakesAndOutcomesBecomeUpstreamsStatuses) {
  Door door(kRules);
  Call call({Descriptor{{"user", "alice"}}, Descriptor{{"path", "/free"}},
             Descriptor{{"nothing", "matches"}}});
  RlsCallState& c = call.state;
  const rls::RateLimitResponse& response = call.response;
  const RlsStatus st = door.translate->prepare(c);
  ASSERT_TRUE(st.ok()) << st.message;
  // One counter to take (the unlimited path and the unmatched descriptor need none).
  ASSERT_EQ(c.requests.size(), 1u);
  const Request& r = c.requests[0];
  EXPECT_EQ(r.verb, Verb::kTake);
  EXPECT_EQ(r.cost, 1);
  EXPECT_EQ(r.key.rfind("rls:api", 0), 0u) << r.key;
  EXPECT_NE(r.key.find("alice"), std::string_view::npos) << r.key;
  EXPECT_EQ(r.spec.kind, Kind::kFixedWindow);
  EXPECT_EQ(r.spec.a, 2);               // (a window's limit)
  EXPECT_EQ(r.spec.c, 60'000'000'000);  // (its length: a minute)
  // The core allowed it, one left.
  Outcome o;
  o.decision.allowed = true;
  o.decision.limit = 2;
  o.decision.remaining = 1;
  ASSERT_TRUE(door.translate->answer(c, &o).ok());
  ASSERT_EQ(response.statuses_size(), 3);
  EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(0).code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 1u);
  EXPECT_EQ(response.statuses(0).current_limit().requests_per_unit(), 2u);
  EXPECT_EQ(response.statuses(0).current_limit().unit(), rls::RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(response.statuses(1).limit_remaining(), std::numeric_limits<uint32_t>::max());
  EXPECT_FALSE(response.statuses(2).has_current_limit());
  // The headers of the descriptor nearest its limit.
  ASSERT_EQ(response.response_headers_to_add_size(), 3);
  EXPECT_EQ(response.response_headers_to_add(1).key(), "RateLimit-Remaining");
  EXPECT_EQ(response.response_headers_to_add(1).value(), "1");
}

TEST(RlsTranslate, ADeniedTakeAZeroLimitAndAPeekAnswerAsUpstream) {
  Door door(kRules);
  Call call({Descriptor{{"user", "bob"}}, Descriptor{{"blocked", "x"}}});
  RlsCallState& c = call.state;
  const rls::RateLimitResponse& response = call.response;
  ASSERT_TRUE(door.translate->prepare(c).ok());
  ASSERT_EQ(c.requests.size(), 1u);  // (requests_per_unit 0 is over without a counter)
  Outcome o;
  o.decision.allowed = false;
  o.decision.limit = 2;
  ASSERT_TRUE(door.translate->answer(c, &o).ok());
  EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(0).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(1).code(), rls::RateLimitResponse::OVER_LIMIT);
  // hits_addend 0: a check, not a take.
  Call peek_call({Descriptor{{"user", "bob"}}});
  RlsCallState& peek = peek_call.state;
  peek.request.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  ASSERT_TRUE(door.translate->prepare(peek).ok());
  ASSERT_EQ(peek.requests.size(), 1u);
  EXPECT_EQ(peek.requests[0].verb, Verb::kPeek);
}

TEST(RlsTranslate, BadCallsAndUndecidedOutcomesEndTheCallWithUpstreamsStatus) {
  Door door(kRules);
  auto prepared = [&](rls::RateLimitRequest req) {
    RlsCallState c;
    c.request = std::move(req);
    return door.translate->prepare(c);
  };
  rls::RateLimitRequest no_domain;
  add(no_domain, {{"user", "a"}});
  EXPECT_EQ(prepared(no_domain).code, RlsStatusCode::kInvalidArgument);
  EXPECT_EQ(prepared(no_domain).message, "rate limit domain must not be empty");
  rls::RateLimitRequest no_descriptors;
  no_descriptors.set_domain("api");
  EXPECT_EQ(prepared(no_descriptors).message, "rate limit descriptor list must not be empty");
  rls::RateLimitRequest too_many;
  too_many.set_domain("api");
  for (int i = 0; i < 1025; ++i) add(too_many, {{"user", "u"}});
  EXPECT_EQ(prepared(too_many).code, RlsStatusCode::kInvalidArgument);
  rls::RateLimitRequest huge_hits;
  huge_hits.set_domain("api");
  add(huge_hits, {{"user", "u"}});
  huge_hits.mutable_descriptors(0)->mutable_hits_addend()->set_value(uint64_t{1} << 50);
  EXPECT_EQ(prepared(huge_hits).code, RlsStatusCode::kInvalidArgument);
  // A user the door runs as that does not exist: every call refused.
  RlsTranslator nobody(door.svc, *door.rules, "nobody", false, std::make_shared<RlsKeys>(1000));
  Call c({Descriptor{{"user", "u"}}});
  EXPECT_EQ(nobody.prepare(c.state).code, RlsStatusCode::kPermissionDenied);
  // The cluster could not decide: the whole call is UNAVAILABLE.
  Call undecided({Descriptor{{"user", "carol"}}});
  RlsCallState& d = undecided.state;
  ASSERT_TRUE(door.translate->prepare(d).ok());
  Outcome o;
  o.code = Code::kTryAgain;
  o.error = "TRYAGAIN the key's owner is down";
  const RlsStatus st = door.translate->answer(d, &o);
  EXPECT_EQ(st.code, RlsStatusCode::kUnavailable);
  EXPECT_EQ(st.message, "TRYAGAIN the key's owner is down");
}

}  // namespace
}  // namespace fg
