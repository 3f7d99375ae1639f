// An HTTP API rate-limited per plan with Floodgate: every response carries
// RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset, and a request over the plan's
// limit gets 429 Too Many Requests with Retry-After.
//
//   http_middleware --port 8080 --seeds 127.0.0.1:7380
//   curl -H 'X-API-Key: free-alice' localhost:8080/hello
//
// Plans come from the API key's prefix here (a real service would look the key up):
// "free-…" gets 100 requests a minute, "starter-…" 3000, anything else is refused with 401.
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "floodgate/client.hpp"

namespace {

struct Plan {
  const char* name;
  floodgate::Limit limit;
};

const Plan* plan_of(const std::string& api_key) {
  // Sliding windows: smooth, O(1) per key, no burst of twice the limit at a minute boundary.
  static const Plan kFree{"free", floodgate::Limit::sliding_window(100, 60'000)};
  static const Plan kStarter{"starter", floodgate::Limit::sliding_window(3000, 60'000)};
  if (api_key.rfind("free-", 0) == 0) return &kFree;
  if (api_key.rfind("starter-", 0) == 0) return &kStarter;
  return nullptr;
}

std::string seconds_up(int64_t ms) { return std::to_string(ms <= 0 ? 0 : (ms + 999) / 1000); }

}  // namespace

int main(int argc, char** argv) {
  int port = 8080;
  std::string seeds = "127.0.0.1:7380";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--port")) port = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seeds")) seeds = argv[i + 1];
  }
  floodgate::Client::Options opt;
  opt.seeds = {seeds};
  opt.deadline = std::chrono::milliseconds(500);  // an API call waits at most this for a verdict
  floodgate::Client limiter(opt);

  httplib::Server http;
  // The middleware: runs before routing, answers 429 itself, or lets the request through
  // with the headers already set on the response.
  http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    const std::string key = req.get_header_value("X-API-Key");
    const Plan* plan = plan_of(key);
    if (!plan) {
      res.status = 401;
      res.set_content("missing or unknown X-API-Key\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    auto d = limiter.take("api:" + key, plan->limit);
    if (!d.ok()) {
      // Floodgate unreachable within the deadline: this service chooses to serve (fail open)
      // rather than turn a limiter outage into an API outage.
      std::fprintf(stderr, "rate limiter unavailable (%s): letting the request through\n",
                   d.error().c_str());
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("RateLimit-Limit", std::to_string(d->limit));
    res.set_header("RateLimit-Remaining", std::to_string(d->remaining));
    res.set_header("RateLimit-Reset", seconds_up(d->reset_after_ms));
    res.set_header("X-Plan", plan->name);
    if (d->allowed) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 429;
    res.set_header("Retry-After", d->retry_after_ms < 0 ? "60" : seconds_up(d->retry_after_ms));
    res.set_content("too many requests for the " + std::string(plan->name) + " plan\n",
                    "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello\n", "text/plain");
  });
  std::printf("http_middleware listening on 127.0.0.1:%d (Floodgate at %s)\n", port, seeds.c_str());
  std::fflush(stdout);
  return http.listen("127.0.0.1", port) ? 0 : 1;
}
