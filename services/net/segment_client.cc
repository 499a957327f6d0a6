#include "services/net/segment_client.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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
      if (!ok || broken) {
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

  // The connection under the call is gone (the channel left READY): no
  // more writes, the hold goes so that the call can end.
  void MarkBroken() {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done || broken || closing) return;
      broken = true;
      if (first_error.ok()) {
        first_error = absl::UnavailableError(
            absl::StrCat("learner ", target, ": connection lost"));
      }
      release = !hold_released && !writing;
      if (release) hold_released = true;
      cv.notify_all();
    }
    if (release) RemoveHold();
  }

  // The call is over or can take no more writes (the learner went away).
  bool Ended() {
    std::lock_guard<std::mutex> lock(mu);
    return (done || broken) && !closing;
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
  std::unique_ptr<GrpcSegmentChannel> c(new GrpcSegmentChannel);
  c->options_ = options;
  c->net_ = net;
  for (const std::string& target : options.targets) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        MakeChannel(target, net);
    if (!channel.ok()) return channel.status();
    c->channels_.push_back(*std::move(channel));
    if (absl::Status s =
            WaitForConnected(c->channels_.back().get(), target, net);
        !s.ok()) {
      return s;
    }
  }
  c->pool_ = std::make_unique<SegmentPool>(options.shape, options.pool);
  std::lock_guard<std::mutex> lock(c->mu_);
  for (size_t i = 0; i < c->channels_.size(); ++i) {
    c->streams_.push_back(std::make_shared<Stream>(
        options.targets[i], c->channels_[i], net, options.in_flight));
    c->reconnecting_.push_back(std::make_unique<std::mutex>());
  }
  for (auto& s : c->streams_) s->Begin();
  c->watcher_ = std::thread([raw = c.get()] { raw->Watch(); });
  return c;
}

void GrpcSegmentChannel::Watch() {
  // A learner killed with its streams open leaves them looking alive until
  // the next write fails, and the segment of that write is lost. The
  // channel leaving READY says at once that its connection is gone.
  std::vector<grpc_connectivity_state> last(channels_.size(),
                                            GRPC_CHANNEL_READY);
  std::unique_lock<std::mutex> lock(watch_mu_);
  while (!closed_.load()) {
    for (size_t i = 0; i < channels_.size(); ++i) {
      const grpc_connectivity_state now = channels_[i]->GetState(false);
      if (last[i] == GRPC_CHANNEL_READY && now != GRPC_CHANNEL_READY) {
        Current(i)->MarkBroken();
      }
      last[i] = now;
    }
    watch_cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

GrpcSegmentChannel::~GrpcSegmentChannel() { Close(); }

RolloutSegment* GrpcSegmentChannel::Acquire() { return pool_->Acquire(); }

std::shared_ptr<GrpcSegmentChannel::Stream> GrpcSegmentChannel::Current(
    size_t rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_[rank];
}

absl::Status GrpcSegmentChannel::Reconnect(
    size_t rank, const std::shared_ptr<Stream>& broken, absl::Time deadline) {
  std::lock_guard<std::mutex> one(*reconnecting_[rank]);
  if (Current(rank) != broken) return absl::OkStatus();  // done meanwhile
  const std::string& target = options_.targets[rank];
  spdlog::warn("segments: the stream to learner {} broke; reconnecting",
               target);
  absl::Duration backoff = absl::Milliseconds(100);
  NetOptions quick = net_;
  quick.call_timeout = absl::Seconds(1);
  absl::Status s;
  for (;;) {
    if (closed_.load()) return absl::CancelledError("segment channel closed");
    s = WaitForConnected(channels_[rank].get(), target, quick);
    if (s.ok()) break;
    if (absl::Now() + backoff > deadline) {
      s = absl::UnavailableError(absl::StrCat(
          "learner ", target, ": the segment stream broke and the learner ",
          "did not answer again within ",
          absl::FormatDuration(options_.reconnect_timeout)));
      std::lock_guard<std::mutex> lock(mu_);
      if (failure_.ok()) failure_ = s;
      return s;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  spdlog::warn(
      "segments: learner {} answers again: a new segment stream "
      "(the segments queued on the broken one are lost)",
      target);
  broken->Close();  // already ended: returns once OnDone has run
  auto fresh = std::make_shared<Stream>(target, channels_[rank], net_,
                                        options_.in_flight);
  fresh->Begin();
  {
    std::lock_guard<std::mutex> lock(mu_);
    retired_.push_back(broken);
    streams_[rank] = fresh;
  }
  reconnects_.fetch_add(1);
  return absl::OkStatus();
}

absl::Status GrpcSegmentChannel::Push(RolloutSegment* segment) {
  const int global_env = options_.first_env_id + segment->env_id;
  const size_t rank = static_cast<size_t>(global_env / options_.route_block) %
                      options_.targets.size();
  const absl::Time deadline = absl::Now() + options_.reconnect_timeout;
  absl::Status s;
  for (;;) {
    std::shared_ptr<Stream> stream = Current(rank);
    s = stream->Push(*segment, global_env);
    if (s.ok()) {
      pushed_.fetch_add(1);
      break;
    }
    if (closed_.load() || !stream->Ended()) break;
    // The learner went away: this segment goes on a new stream.
    if (s = Reconnect(rank, stream, deadline); !s.ok()) break;
  }
  pool_->Release(segment);  // encoded (or refused): ownership ends here
  return s;
}

void GrpcSegmentChannel::Close() {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch_cv_.notify_all();
  }
  if (watcher_.joinable()) watcher_.join();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams = streams_;
  }
  for (auto& s : streams) s->Close();
  pool_->Close();
}

absl::Status GrpcSegmentChannel::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

uint64_t GrpcSegmentChannel::pushed() const { return pushed_.load(); }

uint64_t GrpcSegmentChannel::reconnects() const { return reconnects_.load(); }

}  // namespace rlvla3
