#include "gateway_door.hpp"

#include <algorithm>

#include "services.hpp"

namespace fg {

namespace {

RlqsOptions quota_options(const GatewayOptions& o, std::shared_ptr<RlsKeys> keys) {
  RlqsOptions q;
  q.slice_ns = std::max<int64_t>(1, o.rlqs_slice_ms) * 1'000'000;
  q.user = o.user;
  q.max_keys_per_domain = o.max_keys_per_domain;
  q.keys = std::move(keys);
  return q;
}

}  // namespace

GatewayDoor::LaneParts::LaneParts(Services& svc, RlsRules& rules, const GatewayOptions& o,
                                  std::shared_ptr<RlsKeys> call_keys,
                                  std::shared_ptr<RlsKeys> bucket_keys)
    : translate(svc, rules, o.user, o.response_headers, std::move(call_keys)),
      quota(svc, rules, quota_options(o, std::move(bucket_keys))) {}

GatewayDoor::GatewayDoor(Services& svc, RlsRules& rules, GatewayOptions options, size_t lanes)
    : svc_(svc), rules_(rules), options_(std::move(options)) {
  // (counted apart: a quota bucket's values are the gateway's to choose)
  auto call_keys = std::make_shared<RlsKeys>(static_cast<size_t>(options_.max_keys_per_domain));
  auto bucket_keys = std::make_shared<RlsKeys>(static_cast<size_t>(options_.max_keys_per_domain));
  for (size_t i = 0; i < std::max<size_t>(lanes, 1); ++i)
    lanes_.push_back(std::make_unique<LaneParts>(svc_, rules_, options_, call_keys, bucket_keys));
}

GatewayDoor::~GatewayDoor() = default;

void GatewayDoor::set_token(std::string token) {
  auto t = token.empty() ? nullptr : std::make_shared<const std::string>(std::move(token));
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = std::move(t);
}

std::shared_ptr<const std::string> GatewayDoor::token() const {
  std::lock_guard<std::mutex> lock(token_mu_);
  return token_;
}

bool GatewayDoor::admit() {
  auto& stats = rules_.stats();
  if (stats.connections.fetch_add(1, std::memory_order_relaxed) >= options_.max_clients) {
    stats.connections.fetch_sub(1, std::memory_order_relaxed);
    stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool GatewayDoor::refuse_new() {
  auto& stats = rules_.stats();
  if (stats.connections.load(std::memory_order_relaxed) < options_.max_clients) return false;
  stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void GatewayDoor::left() { rules_.stats().connections.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace fg
