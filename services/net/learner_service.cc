#include "services/net/learner_service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "policies/trainable_policy.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/steady_clock.h"
#include "services/net/weight_codec.h"
#include "services/net/wire_format.h"

namespace rlvla3 {
namespace {

// One version, encoded once and shared by every subscriber.
struct EncodedVersion {
  uint64_t version = 0;
  std::vector<v1::WeightUpdate> chunks;
  v1::WeightUpdate version_only;
};

class SegmentsReactor;
class WeightsReactor;

}  // namespace

struct LearnerService::Impl final : public v1::Learner::CallbackService {
  Impl(const LearnerServiceOptions& o, const NetOptions& n,
       WeightChannel<Policy>* w, MetricsRegistry* metrics)
      : options(o),
        net(n),
        weights(w),
        pool(o.shape, o.segment_count),
        queue(QueueOptions{static_cast<size_t>(o.segment_count),
                           OverflowPolicy::kBlock, 64}),
        received(&metrics->counter("segments_received")),
        rejected(&metrics->counter("segments_rejected")),
        start(std::chrono::steady_clock::now()) {}

  grpc::ServerReadReactor<v1::TrajectorySegment>* PushSegments(
      grpc::CallbackServerContext* ctx, v1::PushSegmentsReply* reply) override;
  grpc::ServerWriteReactor<v1::WeightUpdate>* SubscribeWeights(
      grpc::CallbackServerContext* ctx,
      const v1::WeightSubscription* request) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::StatusRequest*,
                                      v1::RoleStatus* out) override {
    return AnswerNow(ctx, net, [&] {
      out->set_role("learner");
      out->set_running(!queue.closed());
      out->set_policy_version(weights->version());
      out->set_uptime_s(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      out->set_queue_depth(static_cast<uint32_t>(queue.depth()));
      out->set_invalid_requests(rejected->value());
      if (status_fill) status_fill(out);
    });
  }
  grpc::ServerUnaryReactor* GetRunSettings(grpc::CallbackServerContext* ctx,
                                           const v1::StatusRequest*,
                                           v1::RunSettings* out) override {
    return AnswerNow(ctx, net, [&] {
      *out = settings;
      out->set_policy_version(LearnerVersion());
    });
  }
  uint64_t LearnerVersion() const {
    return version_source ? version_source() : weights->version();
  }

  // Level 2: a free segment for the message `r` has read, or `r` is parked
  // until one is released (kParked), or `r` must finish (its call was
  // cancelled, or the service is closing).
  enum class Take { kSegment, kParked, kFinish };
  Take TakeSegment(SegmentsReactor* r, bool cancelled, RolloutSegment** out) {
    std::lock_guard<std::mutex> lock(mu);
    if (cancelled || stopping) return Take::kFinish;
    *out = pool.TryAcquire();
    if (*out != nullptr) return Take::kSegment;
    parked.push_back(r);
    return Take::kParked;
  }
  // Checks and decodes `m` into `s` and queues it; or counts it rejected,
  // gives `s` back and says why.
  absl::Status Ingest(const v1::TrajectorySegment& m, RolloutSegment* s);
  bool Unpark(SegmentsReactor* r) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = parked.begin(); it != parked.end(); ++it) {
      if (*it == r) {
        parked.erase(it);
        return true;
      }
    }
    return false;
  }

  // A segment is free again: the first parked stream gets it.
  void GiveBack(RolloutSegment* segment);

  // Level 3.
  void AddSubscriber(WeightsReactor* r);
  void RemoveSubscriber(WeightsReactor* r) {
    std::lock_guard<std::mutex> lock(mu);
    subscribers.erase(r);
  }
  void EncoderLoop();

  LearnerServiceOptions options;
  NetOptions net;
  WeightChannel<Policy>* weights;
  SegmentPool pool;
  BoundedQueue<RolloutSegment*> queue;  // capacity = pool: never full
  Counter* received;
  Counter* rejected;
  std::chrono::steady_clock::time_point start;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<SegmentsReactor*> parked ABSL_GUARDED_BY(mu);
  std::set<WeightsReactor*> subscribers ABSL_GUARDED_BY(mu);
  std::shared_ptr<const EncodedVersion> encoded ABSL_GUARDED_BY(mu);
  uint64_t publishes ABSL_GUARDED_BY(mu) = 0;  // heard of, to encode
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::function<void(v1::RoleStatus*)> status_fill;  // set before serving
  std::function<uint64_t()> version_source;          // set before serving
  v1::RunSettings settings;                          // set before serving
  std::thread encoder;
};

namespace {

class SegmentsReactor final
    : public grpc::ServerReadReactor<v1::TrajectorySegment> {
 public:
  SegmentsReactor(LearnerService::Impl* svc, v1::PushSegmentsReply* reply)
      : svc_(svc), reply_(reply) {
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the worker half-closed (or the stream broke)
      Finish(grpc::Status::OK);
      return;
    }
    RolloutSegment* s = nullptr;
    switch (svc_->TakeSegment(this, cancelled_.load(), &s)) {
      case LearnerService::Impl::Take::kSegment:
        Resume(s);
        return;
      case LearnerService::Impl::Take::kParked:
        return;  // resumed by GiveBack, or finished by OnCancel / Close
      case LearnerService::Impl::Take::kFinish:
        Finish(grpc::Status::CANCELLED);
        return;
    }
  }
  // May run beside OnReadDone: the flag stops a read that completes now from
  // parking; whoever takes the reactor out of `parked` finishes it.
  void OnCancel() override {
    cancelled_.store(true);
    if (svc_->Unpark(this)) Finish(grpc::Status::CANCELLED);
  }
  void OnDone() override { delete this; }
  // With a free segment for the message read last (any thread).
  void Resume(RolloutSegment* s) {
    ++position_;
    if (absl::Status st = svc_->Ingest(in_, s); !st.ok()) {
      Finish(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat(st.message(), " (segment ", position_, " of this call; ",
                       reply_->accepted(), " accepted before it)")));
      return;
    }
    reply_->set_accepted(reply_->accepted() + 1);
    StartRead(&in_);
  }

 private:
  LearnerService::Impl* svc_;
  v1::PushSegmentsReply* reply_;  // this call's counts
  uint64_t position_ = 0;         // segments read on this call
  v1::TrajectorySegment in_;
  std::atomic<bool> cancelled_{false};
};

class WeightsReactor final : public grpc::ServerWriteReactor<v1::WeightUpdate> {
 public:
  // A subscriber that has version 0 may have nothing yet: it gets the
  // latest version even when that is 0.
  WeightsReactor(uint64_t have_version, bool versions_only)
      : sent_(have_version),
        sent_any_(have_version > 0),
        versions_only_(versions_only) {}
  // A new version is ready (any thread; never blocks).
  void Offer(std::shared_ptr<const EncodedVersion> e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (e == nullptr ||
        (sent_any_ ? e->version <= sent_ : e->version < sent_)) {
      return;
    }
    latest_ = std::move(e);
    if (!writing_ && !finished_) WriteNext();
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {  // the subscriber is gone
      FinishOnce(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    if (!finished_) WriteNext();
  }
  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    FinishOnce(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    svc->RemoveSubscriber(this);
    delete this;
  }
  LearnerService::Impl* svc = nullptr;

 private:
  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (current_ == nullptr || next_chunk_ >= chunks()) {
      if (latest_ == nullptr || latest_ == current_) return;
      current_ = latest_;
      sent_any_ = true;
      next_chunk_ = 0;
      sent_ = current_->version;
    }
    const v1::WeightUpdate* m = versions_only_ ? &current_->version_only
                                               : &current_->chunks[next_chunk_];
    ++next_chunk_;
    writing_ = true;
    StartWrite(m);
  }
  size_t chunks() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return versions_only_ ? 1 : current_->chunks.size();
  }
  void FinishOnce(grpc::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(std::move(s));
  }

  std::mutex mu_;
  uint64_t sent_ ABSL_GUARDED_BY(mu_);  // newest version started (or had)
  bool sent_any_ ABSL_GUARDED_BY(mu_);
  const bool versions_only_;
  std::shared_ptr<const EncodedVersion> current_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const EncodedVersion> latest_ ABSL_GUARDED_BY(mu_);
  size_t next_chunk_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerReadReactor<v1::TrajectorySegment>*
LearnerService::Impl::PushSegments(grpc::CallbackServerContext* ctx,
                                   v1::PushSegmentsReply* reply) {
  if (grpc::Status auth = CheckToken(ctx, net); !auth.ok()) {
    return RefuseCall<grpc::ServerReadReactor<v1::TrajectorySegment>>(auth);
  }
  return new SegmentsReactor(this, reply);
}

grpc::ServerWriteReactor<v1::WeightUpdate>*
LearnerService::Impl::SubscribeWeights(grpc::CallbackServerContext* ctx,
                                       const v1::WeightSubscription* request) {
  if (grpc::Status auth = CheckToken(ctx, net); !auth.ok()) {
    return RefuseCall<grpc::ServerWriteReactor<v1::WeightUpdate>>(auth);
  }
  auto* r =
      new WeightsReactor(request->have_version(), request->versions_only());
  r->svc = this;
  AddSubscriber(r);
  return r;
}

absl::Status LearnerService::Impl::Ingest(const v1::TrajectorySegment& m,
                                          RolloutSegment* s) {
  SegmentLimits limits = options.limits;
  limits.max_version = LearnerVersion() + options.version_slack;
  if (absl::Status st = DecodeSegment(m, limits, s); !st.ok()) {
    const uint64_t before = rejected->value();
    rejected->Add();
    if (before < 5 || (before + 1) % 1000 == 0) {
      spdlog::warn("learner: segment rejected ({} so far): {}", before + 1,
                   std::string(st.message()));
    }
    GiveBack(s);
    return st;
  }
  s->enqueue_ns = SteadyNowNs();
  received->Add();
  if (queue.Push(s, absl::ZeroDuration()) != QueueStatus::kOk) {
    std::lock_guard<std::mutex> lock(mu);
    pool.Release(s);  // closed: the run is ending
  }
  return absl::OkStatus();
}

void LearnerService::Impl::GiveBack(RolloutSegment* segment) {
  SegmentsReactor* r = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (parked.empty() || stopping) {
      pool.Release(segment);
      return;
    }
    r = parked.front();
    parked.pop_front();
  }
  segment->Clear();
  r->Resume(segment);
}

void LearnerService::Impl::AddSubscriber(WeightsReactor* r) {
  std::shared_ptr<const EncodedVersion> e;
  {
    std::lock_guard<std::mutex> lock(mu);
    subscribers.insert(r);
    e = encoded;
  }
  r->Offer(e);
}

void LearnerService::Impl::EncoderLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || publishes > seen; });
      if (stopping) return;
      seen = publishes;
    }
    WeightChannel<Policy>::Entry latest = weights->Latest();
    auto policy = std::dynamic_pointer_cast<TrainablePolicy>(latest.value);
    if (policy == nullptr) continue;
    absl::StatusOr<std::vector<v1::WeightUpdate>> chunks = EncodeWeights(
        policy->State(), policy->kind(), latest.version, options.chunk_bytes);
    if (!chunks.ok()) {
      spdlog::error("learner: cannot encode weights: {}",
                    std::string(chunks.status().message()));
      continue;
    }
    bool too_big = false;
    for (const v1::WeightUpdate& c : *chunks) {
      if (static_cast<int64_t>(c.ByteSizeLong()) > net.max_message_bytes) {
        spdlog::error(
            "learner: weights version {} has a {} byte message, over the {} "
            "byte limit (a single tensor larger than the limit): not sent",
            latest.version, c.ByteSizeLong(), net.max_message_bytes);
        too_big = true;
        break;
      }
    }
    if (too_big) continue;
    auto e = std::make_shared<EncodedVersion>();
    e->version = latest.version;
    e->chunks = *std::move(chunks);
    e->version_only.set_version(latest.version);
    e->version_only.set_num_chunks(1);
    e->version_only.set_policy_kind(policy->kind());
    {
      std::lock_guard<std::mutex> lock(mu);
      encoded = e;
      // Offer under the lock: a subscriber cannot leave (OnDone) meanwhile.
      for (WeightsReactor* r : subscribers) r->Offer(e);
    }
  }
}

LearnerService::LearnerService(const LearnerServiceOptions& options,
                               const NetOptions& net,
                               WeightChannel<Policy>* weights,
                               MetricsRegistry* metrics)
    : impl_(std::make_unique<Impl>(options, net, weights, metrics)) {
  Impl* m = impl_.get();
  weights->Subscribe([m](uint64_t) {
    std::lock_guard<std::mutex> lock(m->mu);
    ++m->publishes;
    m->cv.notify_all();
  });
  {
    std::lock_guard<std::mutex> lock(m->mu);
    if (weights->Latest().value != nullptr) ++m->publishes;
  }
  m->encoder = std::thread([m] { m->EncoderLoop(); });
}

LearnerService::~LearnerService() { Close(); }

grpc::Service* LearnerService::service() { return impl_.get(); }

void LearnerService::SetStatusSource(
    std::function<void(v1::RoleStatus*)> fill) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->status_fill = std::move(fill);
}

void LearnerService::SetVersionSource(std::function<uint64_t()> version) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->version_source = std::move(version);
}

void LearnerService::SetRunSettings(const v1::RunSettings& settings) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->settings = settings;
}

QueueStatus LearnerService::PopBulk(RolloutSegment** out, size_t max,
                                    absl::Duration timeout, size_t* n) {
  return impl_->queue.PopBulk(out, max, timeout, n);
}

void LearnerService::Release(RolloutSegment* segment) {
  impl_->GiveBack(segment);
}

size_t LearnerService::depth() const { return impl_->queue.depth(); }

void LearnerService::Close() {
  std::deque<SegmentsReactor*> parked;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    impl_->cv.notify_all();
    parked.swap(impl_->parked);
  }
  // Parked streams have no operation outstanding: finish them here (the
  // server's shutdown waits for every call to end).
  for (SegmentsReactor* r : parked) r->Finish(grpc::Status::CANCELLED);
  impl_->queue.Close();
  if (impl_->encoder.joinable()) impl_->encoder.join();
}

}  // namespace rlvla3
