#include "services/net/segment_client.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/wire_format.h"

namespace rlvla3 {

struct GrpcSegmentChannel::Stream final
    : public grpc::ClientWriteReactor<v1::TrajectorySegment> {
  Stream(std::string target, std::shared_ptr<grpc::Channel> channel,
         const NetOptions& net, int in_flight)
      : target(std::move(target)), stub(v1::Learner::NewStub(channel)) {
    PrepareContext(&ctx, net, absl::InfiniteDuration());
    for (int i = 0; i < in_flight; ++i) {
      all.push_back(std::make_unique<v1::TrajectorySegment>());
      free.push_back(all.back().get());
    }
  }

  void Begin() {
    stub->async()->PushSegments(&ctx, &reply, this);
    AddHold();  // writes start outside reactions (Push)
    StartCall();
  }

  absl::Status Push(const RolloutSegment& s, int global_env) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !free.empty() || closing || done || broken; });
    if (!first_error.ok()) return first_error;
    if (closing || done || broken) {
      return absl::CancelledError("segment channel closed");
    }
    v1::TrajectorySegment* m = free.back();
    free.pop_back();
    EncodeSegment(s, global_env, m);
    queue.push_back(m);
    ++pushed;
    if (!writing) {
      writing = true;
      StartWrite(queue.front());
    }
    return absl::OkStatus();
  }

  void OnWriteDone(bool ok) override {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      writing = false;
      free.push_back(queue.front());
      queue.pop_front();
      cv.notify_all();
      if (!ok) {
        // The learner is gone or refused the call: no more writes (queued
        // segments are lost with the stream, and Push says so from now on);
        // the hold goes so that OnDone brings the call's status.
        broken = true;
        while (!queue.empty()) {
          free.push_back(queue.front());
          queue.pop_front();
        }
        if (first_error.ok() && !closing) {
          first_error = absl::UnavailableError(
              absl::StrCat("learner ", target, ": the segment stream broke"));
        }
        release = !hold_released;
        hold_released = true;
      } else if (!queue.empty()) {
        writing = true;
        StartWrite(queue.front());
      } else if (closing && !writes_done_sent) {
        writes_done_sent = true;
        StartWritesDone();
      }
    }
    if (release) RemoveHold();
  }

  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!s.ok() && !closing) {
      first_error = FromGrpcStatus(s, absl::StrCat("learner ", target));
    }
    done = true;
    cv.notify_all();
  }

  void Close() {
    bool release;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closing) return;
      closing = true;
      cv.notify_all();
      if (!writing && !writes_done_sent && !broken) {
        writes_done_sent = true;
        StartWritesDone();
      }
      release = !hold_released;
      hold_released = true;
    }
    if (release) RemoveHold();
    std::unique_lock<std::mutex> lock(mu);
    AwaitStreamEnd(lock, cv, ctx, [&] { return done; });
  }

  const std::string target;
  std::unique_ptr<v1::Learner::Stub> stub;
  grpc::ClientContext ctx;
  v1::PushSegmentsReply reply;
  std::vector<std::unique_ptr<v1::TrajectorySegment>> all;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<v1::TrajectorySegment*> free ABSL_GUARDED_BY(mu);
  std::deque<v1::TrajectorySegment*> queue ABSL_GUARDED_BY(mu);
  bool writing ABSL_GUARDED_BY(mu) = false;
  bool closing ABSL_GUARDED_BY(mu) = false;
  bool writes_done_sent ABSL_GUARDED_BY(mu) = false;
  bool broken ABSL_GUARDED_BY(mu) = false;
  bool hold_released ABSL_GUARDED_BY(mu) = false;
  bool done ABSL_GUARDED_BY(mu) = false;
  uint64_t pushed ABSL_GUARDED_BY(mu) = 0;
  absl::Status first_error ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<GrpcSegmentChannel>> GrpcSegmentChannel::Create(
    const SegmentClientOptions& options, const NetOptions& net) {
  if (options.pool < 1 || options.in_flight < 1 || options.route_block < 1 ||
      options.targets.empty()) {
    return absl::InvalidArgumentError(
        "segment channel: needs a target; pool, in_flight and route_block "
        "must be >= 1");
  }
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const std::string& target : options.targets) {
    channels.push_back(MakeChannel(target, net));
    if (absl::Status s = WaitForConnected(channels.back().get(), target, net);
        !s.ok()) {
      return s;
    }
  }
  std::unique_ptr<GrpcSegmentChannel> c(new GrpcSegmentChannel);
  c->pool_ = std::make_unique<SegmentPool>(options.shape, options.pool);
  for (size_t i = 0; i < channels.size(); ++i) {
    c->streams_.push_back(std::make_unique<Stream>(
        options.targets[i], channels[i], net, options.in_flight));
  }
  c->route_block_ = options.route_block;
  c->first_env_id_ = options.first_env_id;
  for (auto& s : c->streams_) s->Begin();
  return c;
}

GrpcSegmentChannel::~GrpcSegmentChannel() { Close(); }

RolloutSegment* GrpcSegmentChannel::Acquire() { return pool_->Acquire(); }

absl::Status GrpcSegmentChannel::Push(RolloutSegment* segment) {
  const int global_env = first_env_id_ + segment->env_id;
  const size_t rank =
      static_cast<size_t>(global_env / route_block_) % streams_.size();
  const absl::Status s = streams_[rank]->Push(*segment, global_env);
  pool_->Release(segment);  // encoded (or refused): ownership ends here
  return s;
}

void GrpcSegmentChannel::Close() {
  if (streams_.empty()) return;
  for (auto& s : streams_) s->Close();
  pool_->Close();
}

absl::Status GrpcSegmentChannel::status() const {
  for (const auto& stream : streams_) {
    std::lock_guard<std::mutex> lock(stream->mu);
    if (!stream->first_error.ok()) return stream->first_error;
    if (stream->done && !stream->closing) {
      return absl::UnavailableError(absl::StrCat("learner ", stream->target,
                                                 " ended the segment stream"));
    }
  }
  return absl::OkStatus();
}

uint64_t GrpcSegmentChannel::pushed() const {
  uint64_t n = 0;
  for (const auto& stream : streams_) {
    std::lock_guard<std::mutex> lock(stream->mu);
    n += stream->pushed;
  }
  return n;
}

}  // namespace rlvla3
