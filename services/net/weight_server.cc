#include "services/net/weight_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "policies/trainable_policy.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/weight_codec.h"

namespace rlvla3 {
namespace {

// One version, encoded once and shared by every subscriber.
struct EncodedVersion {
  uint64_t version = 0;
  std::vector<v1::WeightUpdate> chunks;
  v1::WeightUpdate version_only;
};

class WeightsReactor;

}  // namespace

struct WeightServer::Impl {
  Impl(const WeightServerOptions& o, WeightChannel<Policy>* w)
      : options(o), weights(w) {}

  void AddSubscriber(WeightsReactor* r);
  void RemoveSubscriber(WeightsReactor* r) {
    std::lock_guard<std::mutex> lock(mu);
    subscribers.erase(r);
  }
  void EncoderLoop();
  // The latest weights encoded, or null (logged) when they cannot be sent.
  std::shared_ptr<const EncodedVersion> Encode();

  const WeightServerOptions options;
  WeightChannel<Policy>* weights;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::set<WeightsReactor*> subscribers ABSL_GUARDED_BY(mu);
  std::shared_ptr<const EncodedVersion> encoded ABSL_GUARDED_BY(mu);
  uint64_t publishes ABSL_GUARDED_BY(mu) = 0;     // heard of, to encode
  uint64_t highest_held ABSL_GUARDED_BY(mu) = 0;  // by any subscriber
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::thread encoder;
};

namespace {

class WeightsReactor final : public grpc::ServerWriteReactor<v1::WeightUpdate> {
 public:
  // A subscriber that has version 0 may have nothing yet: it gets the
  // latest version even when that is 0.
  WeightsReactor(WeightServer::Impl* server, uint64_t have_version,
                 bool versions_only)
      : server_(server),
        sent_(have_version),
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
    server_->RemoveSubscriber(this);
    delete this;
  }

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

  WeightServer::Impl* server_;
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

void WeightServer::Impl::AddSubscriber(WeightsReactor* r) {
  std::shared_ptr<const EncodedVersion> e;
  {
    std::lock_guard<std::mutex> lock(mu);
    subscribers.insert(r);
    e = encoded;
  }
  r->Offer(e);
}

std::shared_ptr<const EncodedVersion> WeightServer::Impl::Encode() {
  WeightChannel<Policy>::Entry latest = weights->Latest();
  auto policy = std::dynamic_pointer_cast<TrainablePolicy>(latest.value);
  if (policy == nullptr) return nullptr;
  absl::StatusOr<std::vector<v1::WeightUpdate>> chunks = EncodeWeights(
      policy->State(), policy->kind(), latest.version, options.chunk_bytes);
  if (!chunks.ok()) {
    spdlog::error("learner: cannot encode weights: {}",
                  std::string(chunks.status().message()));
    return nullptr;
  }
  for (const v1::WeightUpdate& c : *chunks) {
    if (static_cast<int64_t>(c.ByteSizeLong()) > options.max_message_bytes) {
      spdlog::error(
          "learner: weights version {} has a {} byte message, over the {} "
          "byte limit (a single tensor larger than the limit): not sent",
          latest.version, c.ByteSizeLong(), options.max_message_bytes);
      return nullptr;
    }
  }
  auto e = std::make_shared<EncodedVersion>();
  e->version = latest.version;
  e->chunks = *std::move(chunks);
  e->version_only.set_version(latest.version);
  e->version_only.set_num_chunks(1);
  e->version_only.set_policy_kind(policy->kind());
  return e;
}

void WeightServer::Impl::EncoderLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || publishes > seen; });
      if (stopping) return;
      seen = publishes;
    }
    std::shared_ptr<const EncodedVersion> e = Encode();
    if (e == nullptr) continue;
    std::lock_guard<std::mutex> lock(mu);
    encoded = e;
    // Offer under the lock: a subscriber cannot leave (OnDone) meanwhile.
    for (WeightsReactor* r : subscribers) r->Offer(e);
  }
}

WeightServer::WeightServer(const WeightServerOptions& options,
                           WeightChannel<Policy>* weights)
    : impl_(std::make_unique<Impl>(options, weights)) {
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

WeightServer::~WeightServer() { Close(); }

grpc::ServerWriteReactor<v1::WeightUpdate>* WeightServer::StartCall(
    const v1::WeightSubscription& request) {
  auto* r = new WeightsReactor(impl_.get(), request.have_version(),
                               request.versions_only());
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->highest_held = std::max(impl_->highest_held, request.have_version());
  }
  impl_->AddSubscriber(r);
  return r;
}

uint64_t WeightServer::encoded_version() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->encoded == nullptr ? 0 : impl_->encoded->version;
}

uint64_t WeightServer::highest_held_version() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->highest_held;
}

void WeightServer::Close() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  if (impl_->encoder.joinable()) impl_->encoder.join();
}

}  // namespace rlvla3
