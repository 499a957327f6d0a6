#include "services/net/observation_client.h"

#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rlvla3/v1/services.grpc.pb.h"

namespace rlvla3 {

// One Act stream: writes queued envs one at a time, reads replies until the
// server finishes. Its first error is kept in `status`.
struct GrpcObservationChannel::Stream final
    : public grpc::ClientBidiReactor<v1::Observation, v1::ActionReply> {
  Stream(std::string target, std::shared_ptr<grpc::Channel> channel,
         const NetOptions& net, const ObservationClientOptions& options,
         const ActionReplyHandler* handler)
      : target(std::move(target)),
        stub(v1::Inference::NewStub(channel)),
        options(options),
        handler(handler) {
    // A stream lives as long as the run: no deadline; keepalive notices a
    // dead server.
    PrepareContext(&ctx, net, absl::InfiniteDuration());
  }

  void Begin() {
    begun = true;
    stub->async()->Act(&ctx, this);
    StartRead(&reply);
    AddHold();  // writes start outside reactions (Submit)
    StartCall();
  }

  absl::Status Submit(const ObservationRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first_error.ok()) return first_error;
    if (closing || done || broken) {
      return absl::CancelledError("observation channel closed");
    }
    pending.push_back(r);
    if (!writing) WriteNext();
    return absl::OkStatus();
  }

  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const ObservationRequest r = pending.front();
    pending.pop_front();
    EncodeObservation(r, r.env + options.env_offset, options.shape, &out);
    out.set_sent_unix_ns(absl::GetCurrentTimeNanos());
    writing = true;
    StartWrite(&out);
  }

  void OnWriteDone(bool ok) override {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      writing = false;
      if (!ok) {
        release = Broke();
      } else if (!pending.empty() && !closing && !broken) {
        WriteNext();
        return;
      }
      if (closing && !writes_done_sent && !broken) {
        writes_done_sent = true;
        StartWritesDone();
      }
    }
    if (release) RemoveHold();
  }

  // The stream failed (the server is gone, or refused the call): no more
  // writes; the hold goes so that OnDone brings the call's status. True when
  // the caller must RemoveHold (outside the lock).
  bool Broke() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    broken = true;
    pending.clear();
    if (first_error.ok() && !closing) {
      first_error = absl::UnavailableError(
          absl::StrCat("inference ", target, ": the stream broke"));
    }
    if (hold_released) return false;
    hold_released = true;
    return true;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the server ended the stream, or it broke
      bool release;
      {
        std::lock_guard<std::mutex> lock(mu);
        release = Broke();
      }
      if (release) RemoveHold();
      return;
    }
    absl::Status s = CheckReply(reply, options.shape);
    ActionReply r = ReplyView(reply);
    r.env -= options.env_offset;
    if (s.ok() && (r.env < 0 || r.env >= options.num_envs)) {
      s = absl::InvalidArgumentError(
          absl::StrCat("reply.env_id: ", reply.env_id(),
                       " is not one of this worker's envs"));
    }
    if (s.ok()) s = (*handler)(absl::MakeConstSpan(&r, 1));
    if (!s.ok()) Fail(s);
    StartRead(&reply);
  }

  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!s.ok() && !closing) {
      // The call's own status says more than "the stream broke".
      first_error = FromGrpcStatus(s, absl::StrCat("inference ", target));
    }
    done = true;
    cv.notify_all();
  }

  void Fail(const absl::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) first_error = s;
  }

  void Close() {
    if (!begun) return;
    bool release;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closing) return;
      closing = true;
      pending.clear();
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

  absl::Status status() {
    std::lock_guard<std::mutex> lock(mu);
    if (!first_error.ok()) return first_error;
    if (done && !closing) {
      return absl::UnavailableError(
          absl::StrCat("inference ", target, " ended the stream"));
    }
    return absl::OkStatus();
  }

  const std::string target;
  std::unique_ptr<v1::Inference::Stub> stub;
  const ObservationClientOptions& options;
  const ActionReplyHandler* handler;
  grpc::ClientContext ctx;
  bool begun = false;     // set once, by the owner's thread, before Submit
  v1::Observation out;    // the message being written
  v1::ActionReply reply;  // the message being read
  std::mutex mu;
  std::condition_variable cv;
  std::deque<ObservationRequest> pending ABSL_GUARDED_BY(mu);
  bool writing ABSL_GUARDED_BY(mu) = false;
  bool broken ABSL_GUARDED_BY(mu) = false;
  bool closing ABSL_GUARDED_BY(mu) = false;
  bool writes_done_sent ABSL_GUARDED_BY(mu) = false;
  bool hold_released ABSL_GUARDED_BY(mu) = false;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status first_error ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<GrpcObservationChannel>>
GrpcObservationChannel::Create(const ObservationClientOptions& options,
                               const NetOptions& net) {
  if (options.targets.empty()) {
    return absl::InvalidArgumentError("no inference server to connect to");
  }
  std::unique_ptr<GrpcObservationChannel> c(new GrpcObservationChannel);
  c->options_ = options;
  for (const std::string& t : options.targets) {
    std::shared_ptr<grpc::Channel> ch = MakeChannel(t, net);
    if (absl::Status s = WaitForConnected(ch.get(), t, net); !s.ok()) return s;
    c->streams_.push_back(
        std::make_unique<Stream>(t, ch, net, c->options_, &c->handler_));
  }
  return c;
}

GrpcObservationChannel::~GrpcObservationChannel() { Close(); }

void GrpcObservationChannel::SetReplyHandler(ActionReplyHandler handler) {
  handler_ = std::move(handler);
  for (auto& s : streams_) s->Begin();
}

absl::Status GrpcObservationChannel::Submit(const ObservationRequest& request) {
  const size_t n = streams_.size();
  return streams_[static_cast<size_t>(request.env) % n]->Submit(request);
}

void GrpcObservationChannel::Close() {
  for (auto& s : streams_) s->Close();
}

absl::Status GrpcObservationChannel::status() const {
  for (const auto& s : streams_) {
    if (absl::Status st = s->status(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
