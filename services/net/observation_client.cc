#include "services/net/observation_client.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "spdlog/spdlog.h"

namespace rlvla3 {
namespace {

// A stream's pending entry that is a notice, not an env.
constexpr int kNotice = -1;

// How often the maintenance thread looks at lost servers and due retries.
constexpr absl::Duration kTick = absl::Milliseconds(20);
// A server that accepts a stream and drops it at once is retried after this,
// doubling up to kMaxStreamBackoff (the channel's own reconnect backoff
// covers a server that refuses connections).
constexpr absl::Duration kMinStreamBackoff = absl::Milliseconds(250);
constexpr absl::Duration kMaxStreamBackoff = absl::Seconds(5);

// Replies that say "not now" rather than "never".
bool Retryable(absl::StatusCode c) {
  return c == absl::StatusCode::kFailedPrecondition ||
         c == absl::StatusCode::kResourceExhausted ||
         c == absl::StatusCode::kUnavailable;
}

// Stream endings that no reconnect will fix.
bool Permanent(absl::StatusCode c) {
  return c == absl::StatusCode::kUnauthenticated ||
         c == absl::StatusCode::kPermissionDenied ||
         c == absl::StatusCode::kUnimplemented;
}

}  // namespace

// One attempt at an Act stream to one server. All its state is guarded by the
// channel's mutex; its reactions call back into the channel.
struct GrpcObservationChannel::Stream final
    : public grpc::ClientBidiReactor<v1::Observation, v1::ActionReply> {
  Stream(GrpcObservationChannel* owner, int target, v1::Inference::Stub* stub,
         const NetOptions& net)
      : owner(owner), target(target) {
    // A stream lives as long as the server does: no deadline; keepalive
    // notices a dead server.
    PrepareContext(&ctx, net, absl::InfiniteDuration());
    stub->async()->Act(&ctx, this);
  }
  void Begin() {
    StartRead(&reply);
    AddHold();  // writes start outside reactions (Submit)
    StartCall();
  }
  void OnWriteDone(bool ok) override { owner->OnWriteDone(this, ok); }
  void OnReadDone(bool ok) override { owner->OnReadDone(this, ok); }
  void OnDone(const grpc::Status& s) override {
    owner->OnStreamDone(this, s.ok() ? absl::OkStatus()
                                     : FromGrpcStatus(s, "inference stream"));
  }

  GrpcObservationChannel* const owner;
  const int target;
  grpc::ClientContext ctx;
  v1::Observation out;     // the message being written
  v1::Observation notice;  // or this one (sync mode)
  v1::ActionReply reply;   // the message being read
  // Guarded by owner->mu_ (a member of another object: no annotation).
  std::deque<int> pending;  // envs (or kNotice) waiting to be written
  bool writing = false;
  bool broken = false;
  bool writes_done_sent = false;
  bool hold_released = false;
  bool answered = false;  // at least one good reply came
  bool done = false;
  bool has_version = false;  // the server said which version it serves
  uint64_t version = 0;
};

struct GrpcObservationChannel::Target {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Inference::Stub> stub;
  Stream* live = nullptr;  // the stream envs are sent on; null while lost
  bool lost_once = false;
  absl::Time next_attempt = absl::InfinitePast();
  absl::Duration backoff = kMinStreamBackoff;
};

struct GrpcObservationChannel::EnvSlot {
  ObservationRequest request;
  bool outstanding = false;  // submitted, no reply handed over yet
  Stream* stream = nullptr;  // where it was sent; null while waiting
  int retries = 0;           // consecutive "not now" replies
};

struct GrpcObservationChannel::Retry {
  absl::Time due;
  int env;
};

GrpcObservationChannel::GrpcObservationChannel(
    const ObservationClientOptions& options, const NetOptions& net)
    : options_(options), net_(net) {}

absl::StatusOr<std::unique_ptr<GrpcObservationChannel>>
GrpcObservationChannel::Create(const ObservationClientOptions& options,
                               const NetOptions& net) {
  if (options.targets.empty()) {
    return absl::InvalidArgumentError("no inference server to connect to");
  }
  if (options.sync && options.targets.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.mode sync across processes runs one inference server (its "
        "barrier waits for every env); got ",
        options.targets.size()));
  }
  std::unique_ptr<GrpcObservationChannel> c(
      new GrpcObservationChannel(options, net));
  std::lock_guard<std::mutex> lock(c->mu_);
  for (const std::string& t : options.targets) {
    auto channel = MakeChannel(t, net);  // refused: the token in plaintext
    if (!channel.ok()) return channel.status();
    Target& target = c->targets_.emplace_back();
    target.address = t;
    target.stub = v1::Inference::NewStub(target.channel = *channel);
  }
  c->envs_.resize(static_cast<size_t>(options.num_envs));
  c->parked_.assign(static_cast<size_t>(options.num_envs), 0);
  c->none_up_since_ = absl::Now();
  // One reachable server is enough to start.
  const absl::Time end = absl::Now() + options.give_up_after;
  while (true) {
    for (Target& t : c->targets_) {
      if (t.channel->GetState(true) == GRPC_CHANNEL_READY) return c;
    }
    if (absl::Now() >= end) break;
    for (Target& t : c->targets_) {
      t.channel->WaitForStateChange(t.channel->GetState(false),
                                    absl::ToChronoTime(absl::Now() + kTick));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("no inference server reachable within ",
                   absl::FormatDuration(options.give_up_after), ": ",
                   absl::StrJoin(options.targets, ", ")));
}

GrpcObservationChannel::~GrpcObservationChannel() { Close(); }

void GrpcObservationChannel::SetReplyHandler(ActionReplyHandler handler) {
  handler_ = std::move(handler);
  maintainer_ = std::thread([this] { Maintain(); });
}

absl::Status GrpcObservationChannel::Submit(const ObservationRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!first_error_.ok()) return first_error_;
  if (closing_) return absl::CancelledError("observation channel closed");
  EnvSlot& e = envs_[static_cast<size_t>(request.env)];
  e.request = request;
  e.outstanding = true;
  e.retries = 0;
  Dispatch(request.env);
  return absl::OkStatus();
}

void GrpcObservationChannel::NoteParked(absl::Span<const int> envs,
                                        bool parked) {
  if (!options_.sync) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (int env : envs) parked_[static_cast<size_t>(env)] = parked ? 1 : 0;
  Stream* s = targets_[0].live;
  if (s != nullptr && !closing_) QueueNotice(s);
}

void GrpcObservationChannel::QueueNotice(Stream* s) {
  // A notice not yet written will carry this change too.
  if (s->pending.empty() || s->pending.back() != kNotice) {
    s->pending.push_back(kNotice);
  }
  if (!s->writing) WriteNext(s);
}

void GrpcObservationChannel::SetVersionHandler(
    std::function<void(uint64_t)> handler) {
  std::lock_guard<std::mutex> lock(version_mu_);
  on_version_ = std::move(handler);
  if (have_version_ && on_version_) on_version_(served_version_);
}

void GrpcObservationChannel::OnVersion(uint64_t version) {
  std::lock_guard<std::mutex> lock(version_mu_);
  if (have_version_ && version <= served_version_) return;
  served_version_ = version;
  have_version_ = true;
  if (on_version_) on_version_(version);
}

void GrpcObservationChannel::Dispatch(int env) {
  EnvSlot& e = envs_[static_cast<size_t>(env)];
  const size_t n = targets_.size();
  for (size_t k = 0; k < n; ++k) {
    Stream* s = targets_[(static_cast<size_t>(env) + k) % n].live;
    if (s == nullptr) continue;
    if (k > 0) ++stats_.failovers;  // its own server is lost
    e.stream = s;
    s->pending.push_back(env);
    if (!s->writing) WriteNext(s);
    return;
  }
  e.stream = nullptr;
  waiting_.push_back(env);
}

void GrpcObservationChannel::WriteNext(Stream* s) {
  const int env = s->pending.front();
  s->pending.pop_front();
  s->writing = true;
  if (env == kNotice) {
    EncodeEnvNotice(options_.env_offset, parked_, &s->notice);
    s->StartWrite(&s->notice);
    return;
  }
  EncodeObservation(envs_[static_cast<size_t>(env)].request,
                    env + options_.env_offset, options_.shape, &s->out);
  s->out.set_sent_unix_ns(absl::GetCurrentTimeNanos());
  s->StartWrite(&s->out);
}

bool GrpcObservationChannel::Lost(Stream* s) {
  if (!s->broken) {
    s->broken = true;
    s->pending.clear();
    Target& t = targets_[static_cast<size_t>(s->target)];
    if (t.live == s) {
      t.live = nullptr;
      t.lost_once = true;
      if (s->answered) t.backoff = kMinStreamBackoff;
      t.next_attempt = absl::Now() + t.backoff;
      t.backoff = std::min(2 * t.backoff, kMaxStreamBackoff);
    }
    const bool any_up = ServersUp() > 0;
    if (!any_up) none_up_since_ = absl::Now();
    if (!closing_) {
      int moved = 0;
      for (size_t env = 0; env < envs_.size(); ++env) {
        if (envs_[env].outstanding && envs_[env].stream == s) {
          Dispatch(static_cast<int>(env));
          ++moved;
        }
      }
      spdlog::warn(
          "inference {} lost; {} observations in flight {}; reconnecting",
          t.address, moved,
          any_up ? "moved to another server" : "wait for a server");
    }
  }
  if (s->hold_released) return false;
  s->hold_released = true;
  return true;
}

void GrpcObservationChannel::OnWriteDone(Stream* s, bool ok) {
  bool release = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->writing = false;
    if (!ok) {
      release = Lost(s);
    } else if (!s->pending.empty() && !closing_ && !s->broken) {
      WriteNext(s);
      return;
    }
    if (closing_ && !s->writes_done_sent && !s->broken) {
      s->writes_done_sent = true;
      s->StartWritesDone();
    }
  }
  if (release) s->RemoveHold();
}

void GrpcObservationChannel::OnReadDone(Stream* s, bool ok) {
  if (!ok) {  // the server ended the stream, or it broke
    bool release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      release = Lost(s);
    }
    if (release) s->RemoveHold();
    return;
  }
  const v1::ActionReply& m = s->reply;
  if (m.version_notice()) {
    std::optional<uint64_t> resume;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s->has_version = true;
      s->version = m.policy_version();
      resume = OldestServedVersion();
    }
    if (resume.has_value()) OnVersion(*resume);
    s->StartRead(&s->reply);
    return;
  }
  const int env = static_cast<int>(m.env_id()) - options_.env_offset;
  absl::Status check = CheckReply(m, options_.shape);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (env < 0 || env >= options_.num_envs) {
      check = absl::InvalidArgumentError(absl::StrCat(
          "reply.env_id: ", m.env_id(), " is not one of this worker's envs"));
      FailLocked(check);
    } else if (EnvSlot& e = envs_[static_cast<size_t>(env)];
               !e.outstanding || e.stream != s) {
      ++stats_.stale_replies;  // it was re-sent elsewhere; that reply counts
      check = absl::CancelledError("stale");
    } else if (!check.ok() && m.error_code() != 0 && Retryable(check.code())) {
      e.stream = nullptr;
      const int64_t backoff_ms = std::min(1000, 10 << std::min(e.retries, 6));
      ++e.retries;
      ++stats_.retries;
      retries_.push_back({absl::Now() + absl::Milliseconds(backoff_ms), env});
    } else if (!check.ok()) {
      FailLocked(check);
    } else {
      e.outstanding = false;
      e.stream = nullptr;
      s->answered = true;
    }
  }
  if (check.ok()) {
    ActionReply r = ReplyView(m);
    r.env = env;
    if (absl::Status h = handler_(absl::MakeConstSpan(&r, 1)); !h.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      FailLocked(h);
    }
  }
  s->StartRead(&s->reply);
}

void GrpcObservationChannel::OnStreamDone(Stream* s,
                                          const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  const Target& t = targets_[static_cast<size_t>(s->target)];
  if (!status.ok() && !closing_) {
    if (Permanent(status.code())) {
      FailLocked(absl::Status(
          status.code(),
          absl::StrCat("inference ", t.address, ": ", status.message())));
    } else {
      spdlog::warn("inference {}: {}", t.address,
                   std::string(status.message()));
    }
  }
  s->done = true;
  cv_.notify_all();
}

std::optional<uint64_t> GrpcObservationChannel::OldestServedVersion() const {
  std::optional<uint64_t> oldest;
  for (const Target& t : targets_) {
    if (t.live == nullptr) continue;
    if (!t.live->has_version) return std::nullopt;  // not known yet
    if (!oldest || t.live->version < *oldest) oldest = t.live->version;
  }
  return oldest;
}

int GrpcObservationChannel::ServersUp() const {
  int up = 0;
  for (const Target& t : targets_) up += t.live != nullptr;
  return up;
}

void GrpcObservationChannel::FailLocked(const absl::Status& s) {
  if (first_error_.ok() && !closing_) first_error_ = s;
}

void GrpcObservationChannel::ReconnectDue(absl::Time now) {
  for (size_t i = 0; i < targets_.size(); ++i) {
    Target& t = targets_[i];
    if (t.live != nullptr || now < t.next_attempt) continue;
    // GetState(true) starts connecting; the stream opens once connected.
    if (t.channel->GetState(true) != GRPC_CHANNEL_READY) {
      t.next_attempt = now + kTick;
      continue;
    }
    streams_.push_back(std::make_unique<Stream>(this, static_cast<int>(i),
                                                t.stub.get(), net_));
    t.live = streams_.back().get();
    t.live->Begin();
    // Registers the envs first: the server then tells this stream each
    // version it serves (the rollout's admission gate runs on it).
    QueueNotice(t.live);
    if (t.lost_once) {
      ++stats_.reconnects;
      spdlog::info("inference {}: stream re-opened", t.address);
    }
    std::deque<int> parked;
    parked.swap(waiting_);
    for (int env : parked) {
      if (envs_[static_cast<size_t>(env)].outstanding) Dispatch(env);
    }
  }
}

void GrpcObservationChannel::Maintain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_) {
    const absl::Time now = absl::Now();
    ReconnectDue(now);
    // Retries whose time has come (an env re-submitted meanwhile is skipped).
    auto due = [&](const Retry& r) { return r.due <= now; };
    for (const Retry& r : retries_) {
      const EnvSlot& e = envs_[static_cast<size_t>(r.env)];
      if (due(r) && e.outstanding && e.stream == nullptr) Dispatch(r.env);
    }
    retries_.erase(std::remove_if(retries_.begin(), retries_.end(), due),
                   retries_.end());
    if (ServersUp() == 0 && now - none_up_since_ > options_.give_up_after) {
      FailLocked(absl::UnavailableError(
          absl::StrCat("no inference server reachable for ",
                       absl::FormatDuration(options_.give_up_after), ": ",
                       absl::StrJoin(options_.targets, ", "))));
    }
    // Streams that have ended and carry nothing are freed.
    streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                  [](const std::unique_ptr<Stream>& s) {
                                    return s->done;
                                  }),
                   streams_.end());
    // A lost server that lagged holds the envs back no longer.
    if (const std::optional<uint64_t> v = OldestServedVersion(); v) {
      lock.unlock();
      OnVersion(*v);
      lock.lock();
      if (closing_) break;
    }
    cv_.wait_for(lock, absl::ToChronoNanoseconds(kTick));
  }
}

void GrpcObservationChannel::Close() {
  std::vector<Stream*> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    cv_.notify_all();
  }
  if (maintainer_.joinable()) maintainer_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : streams_) {
      s->pending.clear();
      if (!s->writing && !s->writes_done_sent && !s->broken && !s->done) {
        s->writes_done_sent = true;
        s->StartWritesDone();
      }
      if (!s->hold_released) {
        s->hold_released = true;
        release.push_back(s.get());
      }
    }
  }
  for (Stream* s : release) s->RemoveHold();
  std::unique_lock<std::mutex> lock(mu_);
  auto all_done = [&] {
    return std::all_of(
        streams_.begin(), streams_.end(),
        [](const std::unique_ptr<Stream>& s) { return s->done; });
  };
  if (!cv_.wait_for(lock, std::chrono::seconds(5), all_done)) {
    for (auto& s : streams_) {
      if (!s->done) s->ctx.TryCancel();
    }
    cv_.wait(lock, all_done);
  }
  streams_.clear();
}

absl::Status GrpcObservationChannel::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

ObservationClientStats GrpcObservationChannel::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ObservationClientStats s = stats_;
  s.servers_up = ServersUp();
  return s;
}

}  // namespace rlvla3
