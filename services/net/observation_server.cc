#include "services/net/observation_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {

// Writes one stream's replies in order, one write in flight, from any
// thread; finishes the stream once the client is done, every observation it
// accepted is answered and every queued reply is written (a client that
// half-closes still gets its pending replies). Never blocks: a reply is
// queued under a short lock.
class ActReactor final
    : public grpc::ServerBidiReactor<v1::Observation, v1::ActionReply> {
 public:
  explicit ActReactor(ObservationServer::Impl* svc);
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // Queues `r` (or an error for `env`). Called under the service's lock.
  void Send(const ActionReply& r, const WireShape& shape);
  void SendError(int env, const absl::Status& status);
  void SendVersion(uint64_t version);

 private:
  v1::ActionReply* FreeMessage() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Enqueue(v1::ActionReply* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ObservationServer::Impl* svc_;
  v1::Observation in_;  // read into; only the stream's reactions touch it
  std::mutex mu_;
  std::vector<std::unique_ptr<v1::ActionReply>> all_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ActionReply*> free_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ActionReply*> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Not reading: queue_ reached max_queued_replies (the client does not
  // read its replies); reads resume once half are written.
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // accepted, not yet answered

 public:
  // Sync mode: the stream has registered envs (guarded by the service's
  // lock).
  bool registered = false;
};

}  // namespace

struct ObservationServer::Impl final : public v1::Inference::CallbackService {
  struct Slot {
    std::vector<uint8_t> images;  // [C, H, W, 3], the run's cameras
    std::vector<float> proprio;
    ActReactor* owner = nullptr;  // null: free, or its stream has ended
    bool busy = false;
    // Sync mode: the stream that registered the env, and whether it said
    // the env is parked.
    ActReactor* member = nullptr;
    bool parked = false;
  };

  Impl(const ObservationServerOptions& o, const NetOptions& n,
       MetricsRegistry* metrics)
      : options(o),
        net(n),
        queue(o.request_queue),
        observations(&metrics->counter("observations_served")),
        invalid(&metrics->counter("invalid_requests")),
        reply_peak(0),
        start(std::chrono::steady_clock::now()) {
    const size_t image =
        static_cast<size_t>(o.shape.height) * o.shape.width * 3;
    slots.resize(static_cast<size_t>(o.num_envs));
    for (Slot& s : slots) {
      s.images.resize(image * o.shape.cameras.size());
      s.proprio.resize(static_cast<size_t>(o.shape.proprio_dim));
    }
  }

  grpc::ServerBidiReactor<v1::Observation, v1::ActionReply>* Act(
      grpc::CallbackServerContext* ctx) override {
    if (grpc::Status auth = CheckToken(ctx, net); !auth.ok()) {
      return RefuseCall<
          grpc::ServerBidiReactor<v1::Observation, v1::ActionReply>>(auth);
    }
    return new ActReactor(this);
  }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::StatusRequest*,
                                      v1::RoleStatus* out) override {
    return AnswerNow(ctx, net, [&] { FillStatus(out); });
  }

  void FillStatus(v1::RoleStatus* out) {
    out->set_role("inference");
    out->set_running(!queue.closed());
    out->set_uptime_s(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    out->set_observations(observations->value());
    out->set_queue_depth(static_cast<uint32_t>(queue.depth()));
    out->set_invalid_requests(invalid->value());
    if (status_fill) status_fill(out);
  }

  // On a stream's reaction: queues one observation for inference, or says
  // why not (the caller answers the env with the error).
  absl::Status Accept(const v1::Observation& m, ActReactor* from) {
    if (absl::Status s = CheckObservation(m, options.shape, options.num_envs,
                                          options.num_tasks);
        !s.ok()) {
      return s;
    }
    const int env = static_cast<int>(m.env_id());
    Slot* slot;
    {
      std::lock_guard<std::mutex> lock(mu);
      slot = &slots[static_cast<size_t>(env)];
      if (slot->busy) {
        return absl::FailedPreconditionError(
            absl::StrCat("observation.env_id: env ", env,
                         " already has an observation waiting for its action"));
      }
      slot->busy = true;
      slot->owner = from;
    }
    const ObservationRequest view = ObservationView(m);
    ObservationRequest r{
        env, view.task, {}, slot->proprio.data(), SteadyNowNs()};
    const size_t C = options.shape.cameras.size();
    const size_t image = slot->images.size() / C;
    for (size_t c = 0; c < C; ++c) {
      uint8_t* to = slot->images.data() + c * image;
      std::memcpy(to, view.images[c], image);
      r.images[c] = to;
    }
    std::memcpy(slot->proprio.data(), view.proprio,
                sizeof(float) * slot->proprio.size());
    const QueueStatus q = queue.Push(r, absl::ZeroDuration());
    if (q == QueueStatus::kOk) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(mu);
    slot->busy = false;
    slot->owner = nullptr;
    return q == QueueStatus::kClosed
               ? absl::UnavailableError("inference server is stopping")
               : absl::ResourceExhaustedError(
                     "request queue full (overflow policy: reject)");
  }

  // On a stream's reaction: a sync notice registers the stream's envs and
  // replaces which of them are parked; the stream hears the version served.
  absl::Status Register(const v1::Observation& m, ActReactor* from) {
    if (absl::Status s = CheckEnvNotice(m, options.num_envs); !s.ok()) {
      return s;
    }
    const v1::EnvNotice& n = m.notice();
    const size_t first = n.first_env_id(), end = first + n.num_envs();
    std::lock_guard<std::mutex> lock(mu);
    for (size_t e = 0; e < slots.size(); ++e) {
      Slot& s = slots[e];
      if (e >= first && e < end) {
        s.member = from;
        s.parked = false;
      } else if (s.member == from) {
        s.member = nullptr;
      }
    }
    for (uint32_t e : n.parked_env_ids()) slots[e].parked = true;
    if (have_version && !from->registered) {
      from->SendVersion(served_version);
    }
    from->registered = true;
    return absl::OkStatus();
  }

  int ActiveEnvs() {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const Slot& s : slots) n += s.member != nullptr && !s.parked;
    return n;
  }

  void AnnounceVersion(uint64_t version) {
    std::lock_guard<std::mutex> lock(mu);
    served_version = version;
    have_version = true;
    std::vector<ActReactor*> told;
    for (const Slot& s : slots) {
      if (s.member == nullptr ||
          std::find(told.begin(), told.end(), s.member) != told.end()) {
        continue;
      }
      told.push_back(s.member);
      s.member->SendVersion(version);
    }
  }

  void Detach(ActReactor* r) {
    std::lock_guard<std::mutex> lock(mu);
    for (Slot& s : slots) {
      if (s.owner == r) s.owner = nullptr;
      if (s.member == r) {
        s.member = nullptr;
        s.parked = false;
      }
    }
  }

  ObservationServerOptions options;
  NetOptions net;
  BoundedQueue<ObservationRequest> queue;
  Counter* observations;
  Counter* invalid;
  std::atomic<int> reply_peak;  // the most replies queued on one stream
  std::chrono::steady_clock::time_point start;
  std::mutex mu;
  std::vector<Slot> slots ABSL_GUARDED_BY(mu);
  uint64_t served_version ABSL_GUARDED_BY(mu) = 0;
  bool have_version ABSL_GUARDED_BY(mu) = false;
  std::function<void(v1::RoleStatus*)> status_fill;  // set before serving
};

namespace {

ActReactor::ActReactor(ObservationServer::Impl* svc) : svc_(svc) {
  StartRead(&in_);
}

void ActReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client finished writing, or the stream broke
    std::lock_guard<std::mutex> lock(mu_);
    reads_done_ = true;
    MaybeFinish();
    return;
  }
  if (in_.has_notice()) {
    if (absl::Status s = svc_->Register(in_, this); !s.ok()) {
      svc_->invalid->Add();
      SendError(static_cast<int>(in_.notice().first_env_id()), s);
    }
  } else {
    {
      // Counted before it is queued: its reply may come before Accept
      // returns.
      std::lock_guard<std::mutex> lock(mu_);
      ++pending_;
    }
    if (absl::Status s = svc_->Accept(in_, this); !s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        --pending_;
      }
      svc_->invalid->Add();
      SendError(static_cast<int>(in_.env_id()), s);
    } else {
      svc_->observations->Add();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(queue_.size()) >= svc_->options.max_queued_replies) {
      read_paused_ = true;
      return;
    }
  }
  StartRead(&in_);
}

void ActReactor::OnCancel() {
  // Pending replies will not be written: the call ends now.
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  MaybeFinish();
}

void ActReactor::OnWriteDone(bool ok) {
  bool resume_reads = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    free_.push_back(queue_.front());
    queue_.pop_front();
    if (!ok) broken_ = true;
    if (read_paused_ && !broken_ && !finished_ &&
        static_cast<int>(queue_.size()) <=
            svc_->options.max_queued_replies / 2) {
      read_paused_ = false;
      resume_reads = true;
    }
    if (!queue_.empty() && !broken_ && !finished_) {
      writing_ = true;
      StartWrite(queue_.front());
    } else {
      MaybeFinish();
    }
  }
  if (resume_reads) StartRead(&in_);
}

void ActReactor::OnDone() {
  svc_->Detach(this);
  delete this;
}

v1::ActionReply* ActReactor::FreeMessage() {
  if (free_.empty()) {
    all_.push_back(std::make_unique<v1::ActionReply>());
    return all_.back().get();
  }
  v1::ActionReply* m = free_.back();
  free_.pop_back();
  return m;
}

void ActReactor::Enqueue(v1::ActionReply* m) {
  queue_.push_back(m);
  const int depth = static_cast<int>(queue_.size());
  int peak = svc_->reply_peak.load(std::memory_order_relaxed);
  while (depth > peak && !svc_->reply_peak.compare_exchange_weak(peak, depth)) {
  }
  if (!writing_) {
    writing_ = true;
    StartWrite(queue_.front());
  }
}

void ActReactor::Send(const ActionReply& r, const WireShape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_ > 0) --pending_;
  if (finished_ || broken_) {
    MaybeFinish();
    return;
  }
  v1::ActionReply* m = FreeMessage();
  EncodeReply(r, shape, m);
  Enqueue(m);
}

void ActReactor::SendError(int env, const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || broken_) return;
  v1::ActionReply* m = FreeMessage();
  EncodeErrorReply(env, status, m);
  Enqueue(m);
}

void ActReactor::SendVersion(uint64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || broken_) return;
  v1::ActionReply* m = FreeMessage();
  EncodeVersionNotice(version, m);
  Enqueue(m);
}

void ActReactor::MaybeFinish() {
  if (finished_ || writing_) return;
  if (cancelled_) {
    finished_ = true;
    Finish(grpc::Status::CANCELLED);
    return;
  }
  if (!reads_done_ || (pending_ > 0 && !broken_)) return;
  finished_ = true;
  Finish(grpc::Status::OK);
}

}  // namespace

ObservationServer::ObservationServer(const ObservationServerOptions& options,
                                     const NetOptions& net,
                                     MetricsRegistry* metrics)
    : impl_(std::make_unique<Impl>(options, net, metrics)) {}

ObservationServer::~ObservationServer() = default;

grpc::Service* ObservationServer::service() { return impl_.get(); }

void ObservationServer::SetStatusSource(
    std::function<void(v1::RoleStatus*)> fill) {
  impl_->status_fill = std::move(fill);
}

void ObservationServer::FillStatus(v1::RoleStatus* out) {
  impl_->FillStatus(out);
}

BoundedQueue<ObservationRequest>& ObservationServer::requests() {
  return impl_->queue;
}

absl::Status ObservationServer::Reply(absl::Span<const ActionReply> replies) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const ActionReply& r : replies) {
    Impl::Slot& s = impl_->slots[static_cast<size_t>(r.env)];
    ActReactor* owner = s.owner;
    s.busy = false;
    s.owner = nullptr;
    // A reply for a stream that has ended is dropped: its worker is gone.
    if (owner != nullptr) owner->Send(r, impl_->options.shape);
  }
  return absl::OkStatus();
}

void ObservationServer::AnnounceVersion(uint64_t version) {
  impl_->AnnounceVersion(version);
}

int ObservationServer::ActiveEnvs() { return impl_->ActiveEnvs(); }

int ObservationServer::reply_queue_peak() const {
  return impl_->reply_peak.load();
}

void ObservationServer::Close() { impl_->queue.Close(); }

}  // namespace rlvla3
