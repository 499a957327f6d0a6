#include "services/net/weight_client.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"

namespace rlvla3 {
namespace {

class WeightsStream;

}  // namespace

struct WeightSubscriber::Impl {
  WeightClientOptions options;
  NetOptions net;
  Callbacks callbacks;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Learner::Stub> stub;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::WeightUpdate> chunks ABSL_GUARDED_BY(mu);
  bool stream_done ABSL_GUARDED_BY(mu) = true;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool connected ABSL_GUARDED_BY(mu) = false;
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  absl::Status status ABSL_GUARDED_BY(mu);
  WeightsStream* stream ABSL_GUARDED_BY(mu) = nullptr;
  std::thread thread;

  void Loop();
  void OnChunk(v1::WeightUpdate&& m);
  void OnStreamDone(const grpc::Status& s);
};

namespace {

class WeightsStream final : public grpc::ClientReadReactor<v1::WeightUpdate> {
 public:
  WeightsStream(WeightSubscriber::Impl* sub, uint64_t have) : sub_(sub) {
    PrepareContext(&ctx_, sub->net, absl::InfiniteDuration());
    request_.set_have_version(have);
    request_.set_versions_only(sub->options.versions_only);
  }
  void Begin() {
    sub_->stub->async()->SubscribeWeights(&ctx_, &request_, this);
    StartRead(&in_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    sub_->OnChunk(std::move(in_));
    in_.Clear();
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& s) override {
    sub_->OnStreamDone(s);
    delete this;
  }
  void Cancel() { ctx_.TryCancel(); }

 private:
  WeightSubscriber::Impl* sub_;
  grpc::ClientContext ctx_;
  v1::WeightSubscription request_;
  v1::WeightUpdate in_;
};

}  // namespace

void WeightSubscriber::Impl::OnChunk(v1::WeightUpdate&& m) {
  if (options.versions_only) {
    {
      std::lock_guard<std::mutex> lock(mu);
      connected = true;
      version = std::max(version, m.version());
    }
    if (callbacks.on_version) callbacks.on_version(m.version());
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  connected = true;
  if (m.chunk_index() == 0) {
    // Latest wins: queued chunks of an older version are never needed.
    chunks.clear();
  }
  chunks.push_back(std::move(m));
  cv.notify_all();
}

void WeightSubscriber::Impl::OnStreamDone(const grpc::Status& s) {
  std::lock_guard<std::mutex> lock(mu);
  stream = nullptr;
  stream_done = true;
  connected = false;
  if (!stopping && !s.ok()) {
    status = FromGrpcStatus(s, absl::StrCat("weights from ", options.target));
  }
  cv.notify_all();
}

void WeightSubscriber::Impl::Loop() {
  WeightAssembler assembler(options.policy_kind);
  absl::Duration backoff = absl::Milliseconds(100);
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    if (stream_done) {
      stream_done = false;
      auto* s = new WeightsStream(this, version);
      stream = s;
      lock.unlock();
      s->Begin();
      lock.lock();
      continue;
    }
    cv.wait(lock, [&] { return stopping || stream_done || !chunks.empty(); });
    if (stream_done && !stopping) {
      // Reconnect after a pause (the learner may be restarting).
      cv.wait_for(lock, absl::ToChronoNanoseconds(backoff),
                  [&] { return stopping; });
      backoff = std::min(backoff * 2, absl::Seconds(2));
      continue;
    }
    while (!chunks.empty() && !stopping) {
      v1::WeightUpdate m = std::move(chunks.front());
      chunks.pop_front();
      lock.unlock();
      absl::Status s = assembler.Add(m);
      bool delivered = false;
      uint64_t v = 0;
      if (s.ok() && assembler.complete()) {
        absl::StatusOr<AssembledWeights> w = assembler.Take();
        s = w.status();
        if (s.ok()) {
          v = w->version;
          if (callbacks.on_weights) s = callbacks.on_weights(*std::move(w));
          delivered = s.ok();
        }
      }
      lock.lock();
      if (!s.ok()) {
        status = s;
      } else if (delivered) {
        version = std::max(version, v);
        status = absl::OkStatus();
        backoff = absl::Milliseconds(100);
      }
    }
  }
}

WeightSubscriber::WeightSubscriber(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<WeightSubscriber>> WeightSubscriber::Start(
    const WeightClientOptions& options, const NetOptions& net,
    Callbacks callbacks) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->net = net;
  impl->callbacks = std::move(callbacks);
  impl->version = options.have_version;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(options.target, net);
  if (!channel.ok()) return channel.status();
  impl->channel = *std::move(channel);
  if (absl::Status s =
          WaitForConnected(impl->channel.get(), options.target, net);
      !s.ok()) {
    return s;
  }
  impl->stub = v1::Learner::NewStub(impl->channel);
  Impl* m = impl.get();
  impl->thread = std::thread([m] { m->Loop(); });
  return std::unique_ptr<WeightSubscriber>(
      new WeightSubscriber(std::move(impl)));
}

WeightSubscriber::~WeightSubscriber() { Stop(); }

void WeightSubscriber::Stop() {
  Impl& m = *impl_;
  {
    std::unique_lock<std::mutex> lock(m.mu);
    if (m.stopping && !m.thread.joinable()) return;
    m.stopping = true;
    m.cv.notify_all();
  }
  if (m.thread.joinable()) m.thread.join();
  std::unique_lock<std::mutex> lock(m.mu);
  if (m.stream != nullptr) m.stream->Cancel();
  m.cv.wait(lock, [&] { return m.stream == nullptr; });
}

absl::Status WeightSubscriber::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->status;
}

uint64_t WeightSubscriber::version() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->version;
}

bool WeightSubscriber::connected() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->connected;
}

}  // namespace rlvla3
