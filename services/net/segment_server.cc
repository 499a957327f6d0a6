#include "services/net/segment_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/steady_clock.h"

namespace rlvla3 {
namespace {
class SegmentsReactor;
}  // namespace

struct SegmentServer::Impl {
  Impl(const SegmentServerOptions& o, MetricsRegistry* metrics)
      : options(o),
        pool(o.shape, o.segment_count),
        queue(QueueOptions{static_cast<size_t>(o.segment_count),
                           OverflowPolicy::kBlock, 64}),
        received(&metrics->counter("segments_received")),
        rejected(&metrics->counter("segments_rejected")) {}

  // A free segment for the message `r` has read, or `r` is parked until one
  // is released (kParked), or `r` must finish (its call was cancelled, or
  // the server is closing).
  enum class Take { kSegment, kParked, kFinish, kBusy };
  Take TakeSegment(SegmentsReactor* r, bool cancelled, RolloutSegment** out) {
    std::lock_guard<std::mutex> lock(mu);
    if (cancelled || stopping) return Take::kFinish;
    *out = pool.TryAcquire();
    if (*out != nullptr) return Take::kSegment;
    if (parked.size() >= options.max_parked_streams) return Take::kBusy;
    parked.push_back(r);
    return Take::kParked;
  }
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
  // Checks and decodes `m` into `s` and queues it; or counts it rejected
  // and says why (`s` stays the caller's).
  absl::Status Ingest(const v1::TrajectorySegment& m, RolloutSegment* s);
  // A segment is free again: the first parked stream gets it; if that
  // stream's message is refused, the next one does, in a loop (never a
  // recursion: a chain of parked streams holding bad segments is as deep as
  // a peer makes it).
  void GiveBack(RolloutSegment* segment);

  const SegmentServerOptions options;
  SegmentPool pool;
  BoundedQueue<RolloutSegment*> queue;  // capacity = pool: never full
  Counter* received;
  Counter* rejected;
  std::function<uint64_t()> version_source;  // set before serving
  std::mutex mu;
  std::deque<SegmentsReactor*> parked ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
};

namespace {

class SegmentsReactor final
    : public grpc::ServerReadReactor<v1::TrajectorySegment> {
 public:
  SegmentsReactor(SegmentServer::Impl* server, v1::PushSegmentsReply* reply)
      : server_(server), reply_(reply) {
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the worker half-closed (or the stream broke)
      Finish(grpc::Status::OK);
      return;
    }
    RolloutSegment* s = nullptr;
    switch (server_->TakeSegment(this, cancelled_.load(), &s)) {
      case SegmentServer::Impl::Take::kSegment: {
        SegmentServer::Impl* server = server_;  // `this` may end in Resume
        if (RolloutSegment* back = Resume(s)) server->GiveBack(back);
        return;
      }
      case SegmentServer::Impl::Take::kParked:
        return;  // resumed by GiveBack, or finished by OnCancel / Close
      case SegmentServer::Impl::Take::kFinish:
        Finish(grpc::Status::CANCELLED);
        return;
      case SegmentServer::Impl::Take::kBusy:
        Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "the learner holds its limit of streams waiting "
                            "for a free segment; retry later"));
        return;
    }
  }
  // May run beside OnReadDone: the flag stops a read that completes now from
  // parking; whoever takes the reactor out of `parked` finishes it.
  void OnCancel() override {
    cancelled_.store(true);
    if (server_->Unpark(this)) Finish(grpc::Status::CANCELLED);
  }
  void OnDone() override { delete this; }
  // With a free segment for the message read last (any thread): nullptr
  // when the message took it, else the segment back (the message was
  // refused and this call finished).
  RolloutSegment* Resume(RolloutSegment* s) {
    ++position_;
    if (absl::Status st = server_->Ingest(in_, s); !st.ok()) {
      Finish(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat(st.message(), " (segment ", position_, " of this call; ",
                       reply_->accepted(), " accepted before it)")));
      return s;
    }
    reply_->set_accepted(reply_->accepted() + 1);
    StartRead(&in_);
    return nullptr;
  }

 private:
  SegmentServer::Impl* server_;
  v1::PushSegmentsReply* reply_;  // this call's counts
  uint64_t position_ = 0;         // segments read on this call
  v1::TrajectorySegment in_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

absl::Status SegmentServer::Impl::Ingest(const v1::TrajectorySegment& m,
                                         RolloutSegment* s) {
  SegmentLimits limits = options.limits;
  if (version_source) {
    limits.max_version = version_source() + options.version_slack;
  }
  if (absl::Status st = DecodeSegment(m, limits, s); !st.ok()) {
    const uint64_t before = rejected->value();
    rejected->Add();
    if (before < 5 || (before + 1) % 1000 == 0) {
      spdlog::warn("learner: segment rejected ({} so far): {}", before + 1,
                   std::string(st.message()));
    }
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

void SegmentServer::Impl::GiveBack(RolloutSegment* segment) {
  while (segment != nullptr) {
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
    segment = r->Resume(segment);  // back when r's message was refused
  }
}

SegmentServer::SegmentServer(const SegmentServerOptions& options,
                             MetricsRegistry* metrics)
    : impl_(std::make_unique<Impl>(options, metrics)) {}

SegmentServer::~SegmentServer() { Close(); }

grpc::ServerReadReactor<v1::TrajectorySegment>* SegmentServer::StartCall(
    v1::PushSegmentsReply* reply) {
  return new SegmentsReactor(impl_.get(), reply);
}

void SegmentServer::SetVersionSource(std::function<uint64_t()> version) {
  impl_->version_source = std::move(version);
}

QueueStatus SegmentServer::PopBulk(RolloutSegment** out, size_t max,
                                   absl::Duration timeout, size_t* n) {
  return impl_->queue.PopBulk(out, max, timeout, n);
}

void SegmentServer::Release(RolloutSegment* segment) {
  impl_->GiveBack(segment);
}

size_t SegmentServer::depth() const { return impl_->queue.depth(); }

bool SegmentServer::closed() const { return impl_->queue.closed(); }

uint64_t SegmentServer::rejected() const { return impl_->rejected->value(); }

size_t SegmentServer::parked_streams() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->parked.size();
}

void SegmentServer::Close() {
  std::deque<SegmentsReactor*> parked;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    parked.swap(impl_->parked);
  }
  // Parked streams have no operation outstanding: finish them here (the
  // server's shutdown waits for every call to end).
  for (SegmentsReactor* r : parked) r->Finish(grpc::Status::CANCELLED);
  impl_->queue.Close();
}

}  // namespace rlvla3
