// The two sides of a forward.
#include "forwarding.hpp"

#include <google/protobuf/arena.h>

#include "acl.hpp"
#include "cluster.hpp"
#include "errors.hpp"
#include "forward.pb.h"
#include "forward_codec.hpp"
#include "request_job.hpp"

namespace fg {

namespace {
// Arenas for forwarded batches: blocks of 4 KiB growing to 64 KiB.
google::protobuf::ArenaOptions arena_options() {
  google::protobuf::ArenaOptions o;
  o.start_block_size = 4096;
  o.max_block_size = 65536;
  return o;
}

const char* silence(PeerStatus st) {
  switch (st) {
    case PeerStatus::kTimeout:
      return "timeout";
    case PeerStatus::kUnavailable:
      return "unreachable";
    case PeerStatus::kUnknownKind:
      return "forwarding not supported";
    default:
      return "error";
  }
}
}  // namespace

void ClusterForwarder::send(const std::string& peer_addr, std::string batch, int64_t timeout_ms,
                            std::function<void(bool ok, std::string body)> done) {
  cluster_.call(peer_addr, kPeerForward, std::move(batch), std::chrono::milliseconds(timeout_ms),
                [done = std::move(done)](PeerStatus st, std::string body) {
                  if (st == PeerStatus::kOk) return done(true, std::move(body));
                  done(false, st == PeerStatus::kError && !body.empty() ? "error: " + body
                                                                        : std::string(silence(st)));
                });
}

namespace {
// Why `u` may not run forwarded request `r` here (Redis's -NOPERM text), or empty. The
// sending node checked the same before it forwarded; the owner checks again, as it knows
// the user, so a forward is never worth more rights than its user has.
std::string refused_here(Services& svc, const AclUser& u, const Request& r,
                         const forward::ForwardedRequest& in) {
  if (u.unrestricted()) return {};
  const AclCatalog& catalog = svc.acl->catalog();
  std::vector<std::string_view> words;
  int entry;
  if (r.verb == Verb::kData) {
    words = *r.args;
    entry = catalog.lookup(words);
  } else {
    const std::string_view name = in.command().empty() ? acl_command_of(r.verb) : in.command();
    entry = catalog.find(name);
    if (entry >= 0) {
      words.push_back(catalog.at(entry).name);
      if (catalog.at(entry).first_key > 0) words.push_back(r.key);
    }
  }
  if (entry < 0) return err::kNoPermForwarded;
  size_t pos = 0;
  const AclDenied d = u.check(entry, words, &pos);
  if (d == AclDenied::kNone) return {};
  svc.acl->refused(d, "toplevel", d == AclDenied::kKey ? words[pos] : catalog.at(entry).name,
                   u.name(), "");
  return acl_denied_error(catalog, d, entry);
}
}  // namespace

void serve_forwarded(Services& svc, std::string body,
                     std::function<void(bool ok, std::string body)> respond, bool legacy) {
  // The batch, and the lists of words of its data commands, live as long as the job. The
  // batch's requests and their strings sit in an arena: a handful of block allocations per
  // batch instead of several per request, all given back at once.
  struct Kept {
    google::protobuf::Arena arena{arena_options()};
    forward::ForwardBatch* batch =
        google::protobuf::Arena::CreateMessage<forward::ForwardBatch>(&arena);
    std::deque<std::vector<std::string_view>> argvs;
    std::vector<std::shared_ptr<const AclUser>> users;  // the askers, while their requests run
  };
  auto kept = std::make_shared<Kept>();
  if (!kept->batch->ParseFromString(body) || kept->batch->hops() == 0) {
    return respond(false, "malformed forward");
  }
  const forward::ForwardBatch* batch = kept->batch;
  const int n = batch->requests_size();
  svc.counters.forwards_served.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  // Requests this node cannot read are answered as such; the others run.
  auto refused = std::make_shared<std::vector<std::pair<int, std::string>>>();
  std::vector<Request> requests;
  std::vector<int> index;  // request -> its place in the batch
  requests.reserve(static_cast<size_t>(n));
  index.reserve(static_cast<size_t>(n));
  // (a batch's requests are mostly one user's: looked up once per run of the same name)
  std::shared_ptr<const AclUser> last_user;
  for (int i = 0; i < n; ++i) {
    Result<Request> r = decode_forwarded(batch->requests(i), kept->argvs);
    if (!r.ok()) {
      refused->emplace_back(i, r.error());
      continue;
    }
    const forward::ForwardedRequest& in = batch->requests(i);
    if (const std::string& name = in.user(); !name.empty()) {
      // It runs with its user's rights as this node knows them (every node reads the same
      // users file): checked again here, and a script's calls likewise; a user this node
      // does not have runs nothing.
      const bool same = last_user && last_user->name() == name;
      std::shared_ptr<const AclUser> u = same ? last_user : svc.acl->find(name);
      if (!u || !u->enabled()) {
        refused->emplace_back(i, err::unknown_user_at_owner(name));
        continue;
      }
      if (std::string why = refused_here(svc, *u, r.value(), in); !why.empty()) {
        refused->emplace_back(i, std::move(why));
        continue;
      }
      r.value().asker = u.get();
      r.value().command = in.command();
      if (!u->unrestricted()) r.value().user = u.get();
      if (!same) {
        kept->users.push_back(u);
        last_user = std::move(u);
      }
    } else if (!in.by_node() && !legacy) {
      refused->emplace_back(i, err::kForwardWithoutUser);
      continue;
    }
    requests.push_back(r.value());
    index.push_back(i);
  }
  Door door;
  door.mode = RouteMode::kForward;
  door.hops = batch->hops();
  door.count = false;  // the node whose client asked counts it
  RequestJob::start(svc, svc.lane(), std::move(requests), door, kept,
                    [batch, kept, refused, index = std::move(index),
                     respond = std::move(respond)](std::vector<Outcome>& outcomes) {
                      google::protobuf::Arena arena(arena_options());
                      auto& out =
                          *google::protobuf::Arena::CreateMessage<forward::ForwardOutcomes>(&arena);
                      for (int i = 0; i < batch->requests_size(); ++i) out.add_outcomes();
                      for (size_t k = 0; k < outcomes.size(); ++k) {
                        const Verb verb = static_cast<Verb>(batch->requests(index[k]).verb());
                        encode_outcome(outcomes[k], verb, *out.mutable_outcomes(index[k]));
                      }
                      for (const auto& [i, why] : *refused) {
                        out.mutable_outcomes(i)->set_code(static_cast<uint32_t>(Code::kError));
                        out.mutable_outcomes(i)->set_error(why);
                      }
                      respond(true, out.SerializeAsString());
                    });
}

void serve_forwards(Cluster& cluster, Services& svc) {
  cluster.on_request(
      kPeerForward, [&cluster, &svc](uint32_t, std::string body, PeerServer::Respond respond) {
        // Answered from a lane's thread; the peer link's side of it lives on the cluster thread.
        serve_forwarded(
            svc, std::move(body),
            [&cluster, respond = std::move(respond)](bool ok, std::string out) mutable {
              asio::post(cluster.io(),
                         [respond = std::move(respond), ok, out = std::move(out)]() mutable {
                           if (ok) return respond(PeerStatus::kOk, std::move(out), {});
                           respond(PeerStatus::kError, {}, std::move(out));
                         });
            },
            cluster.config().membership.accept_unaddressed);
      });
}

}  // namespace fg
