#include "services/net/roster.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rlvla3 {

RosterService::RosterService(const NetOptions& net, absl::Duration timeout,
                             int max_roles)
    : net_(net),
      timeout_(timeout),
      max_roles_(static_cast<size_t>(std::max(1, max_roles))),
      incarnation_(static_cast<uint64_t>(absl::GetCurrentTimeNanos())) {}

void RosterService::SetStarvedSource(std::function<uint64_t()> starved) {
  starved_ = std::move(starved);
}

bool RosterService::MakeRoom(const std::string& address) {
  if (entries_.size() < max_roles_ || entries_.count(address) > 0) return true;
  const absl::Time forget_before = absl::Now() - 10 * timeout_;
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->second.last < forget_before ? entries_.erase(it) : std::next(it);
  }
  return entries_.size() < max_roles_;
}

grpc::ServerUnaryReactor* RosterService::Heartbeat(
    grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest* request,
    v1::HeartbeatReply* reply) {
  auto* r = ctx->DefaultReactor();
  if (grpc::Status s = CheckToken(ctx, net_); !s.ok()) {
    r->Finish(s);
    return r;
  }
  if (request->address().empty() || request->address().size() > 512) {
    r->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           "heartbeat.address: empty or over 512 bytes"));
    return r;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!MakeRoom(request->address())) {
      r->Finish(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("roster full: ", max_roles_,
                       " roles reporting (cluster.max_roster_roles)")));
      return r;
    }
    Entry& e = entries_[request->address()];
    e.last = absl::Now();
    e.status = request->status();
  }
  reply->set_learner_incarnation(incarnation_);
  if (starved_) reply->set_learner_starved(starved_());
  r->Finish(grpc::Status::OK);
  return r;
}

v1::RoleRoster RosterService::Snapshot() const {
  v1::RoleRoster out;
  out.set_timeout_s(absl::ToDoubleSeconds(timeout_));
  const absl::Time now = absl::Now();
  std::vector<const std::pair<const std::string, Entry>*> sorted;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& kv : entries_) sorted.push_back(&kv);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::make_pair(a->second.status.role(), a->first) <
           std::make_pair(b->second.status.role(), b->first);
  });
  for (const auto* kv : sorted) {
    v1::RosterEntry* e = out.add_roles();
    e->set_address(kv->first);
    const absl::Duration quiet = now - kv->second.last;
    e->set_silent_s(absl::ToDoubleSeconds(quiet));
    e->set_silent(quiet > timeout_);
    *e->mutable_status() = kv->second.status;
  }
  return out;
}

grpc::ServerUnaryReactor* RosterService::ListRoles(
    grpc::CallbackServerContext* ctx, const v1::StatusRequest*,
    v1::RoleRoster* reply) {
  return AnswerNow(ctx, net_, [&] { *reply = Snapshot(); });
}

absl::StatusOr<v1::RoleRoster> ListRoles(const std::string& target,
                                         const NetOptions& net) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(target, net);
  if (!channel.ok()) return channel.status();
  auto stub = v1::Roster::NewStub(*channel);
  grpc::ClientContext ctx;
  PrepareContext(&ctx, net, net.call_timeout);
  v1::RoleRoster out;
  const grpc::Status s = stub->ListRoles(&ctx, v1::StatusRequest(), &out);
  if (!s.ok()) return FromGrpcStatus(s, "roster of " + target);
  return out;
}

absl::StatusOr<std::unique_ptr<HeartbeatSender>> HeartbeatSender::Start(
    const HeartbeatOptions& options, const NetOptions& net,
    std::function<void(v1::RoleStatus*)> fill) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(options.learner, net);
  if (!channel.ok()) return channel.status();
  std::unique_ptr<HeartbeatSender> h(new HeartbeatSender);
  h->options_ = options;
  h->net_ = net;
  h->fill_ = std::move(fill);
  h->stub_ = v1::Roster::NewStub(*channel);
  HeartbeatSender* self = h.get();
  h->thread_ = std::thread([self] { self->Run(); });
  return h;
}

HeartbeatSender::~HeartbeatSender() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeartbeatSender::Run() {
  bool failing = false;  // log a failure streak once, and its end
  v1::HeartbeatRequest beat;
  beat.set_address(options_.address);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    beat.mutable_status()->Clear();
    fill_(beat.mutable_status());
    grpc::ClientContext ctx;
    // A beat that cannot land within its period is late anyway.
    PrepareContext(&ctx, net_, std::max(options_.period, absl::Seconds(1)));
    v1::HeartbeatReply reply;
    const grpc::Status s = stub_->Heartbeat(&ctx, beat, &reply);
    if (!s.ok() && !failing) {
      spdlog::warn("heartbeat to learner {}: {}", options_.learner,
                   s.error_message());
    } else if (s.ok() && failing) {
      spdlog::info("heartbeat to learner {}: delivered again",
                   options_.learner);
    }
    failing = !s.ok();
    if (s.ok() && options_.on_reply) {
      options_.on_reply(reply.learner_incarnation(), reply.learner_starved());
    }
    lock.lock();
    cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.period),
                 [&] { return stop_; });
  }
}

}  // namespace rlvla3
