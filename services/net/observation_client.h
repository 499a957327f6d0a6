// File: services/net/observation_client.h
// -----------------------------------------------------------------------------
// The rollout worker's end of level 1 over gRPC: one bidirectional Act stream
// per inference server, envs sharded across them (env % servers). Submit
// queues the env (its data stays in the worker's segment slot until the reply,
// so it is encoded only when its turn to be written comes: one message per
// stream, reused) and never blocks; replies are checked and handed to the
// reply handler on gRPC's callback threads. Local env ids become global ones
// (+ env_offset) on the wire and local again in replies.
//
// Losing a server is not an error of the worker: the observations in flight
// on its stream fail over to another live server (or wait for one), and a
// maintenance thread re-opens the stream once the server answers again (the
// channel's own reconnect backoff, then ours for streams refused at once).
// Replies "busy" (a previous incarnation's observation for the env is still
// queued), "queue full" or "stopping" are retried after a short delay. Only
// no server at all for `give_up_after`, a refused token, or an observation
// the server calls invalid (this worker and the server disagree on the spec)
// end the channel with an error.
//
// Each stream opens with an EnvNotice registering this worker's envs; the
// server answers with the version it serves and a notice for every version
// it loads after. The version handler hears the oldest version the live
// servers serve, once every live server has said (never going back): envs
// resume on the version their inference servers serve, not the learner's
// (whose weights may still be on their way), nor the newest server's (an env
// sent to one that lags would act on weights staler than the admission gate
// allowed; with several servers a lost one's envs fail over to any other). Sync
// mode (options.sync, one server) adds a notice for every park or resume
// (NoteParked), ordered with the observations, so the server's barrier knows
// which envs to wait for.
//
// Example:
//   auto ch = GrpcObservationChannel::Create(options, net);
//   (*ch)->SetReplyHandler(handler);     // then hand *ch to RolloutWorker
//   ...
//   (*ch)->Close();  absl::Status s = (*ch)->status();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_
#define RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/channels/observation_channel.h"
#include "services/net/grpc_common.h"
#include "services/net/wire_format.h"

namespace rlvla3 {

struct ObservationClientOptions {
  std::vector<std::string> targets;  // inference servers, host:port
  int env_offset = 0;                // global id of local env 0
  int num_envs = 0;                  // local envs
  WireShape shape;
  // No inference server reachable this long: status() becomes an error.
  absl::Duration give_up_after = absl::Seconds(60);
  bool sync = false;  // run.mode sync: needs exactly one target
};

struct ObservationClientStats {
  uint64_t failovers = 0;  // observations sent elsewhere: their server was lost
  uint64_t reconnects = 0;     // streams re-opened to a server that was lost
  uint64_t retries = 0;        // observations re-sent after busy / queue full
  uint64_t stale_replies = 0;  // replies for an observation re-sent elsewhere
  int servers_up = 0;
};

class GrpcObservationChannel final : public ObservationChannel {
 public:
  // Waits (at most options.give_up_after) until one target accepts a
  // connection; the others are connected in the background.
  static absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> Create(
      const ObservationClientOptions& options, const NetOptions& net);
  ~GrpcObservationChannel() override;

  // Starts the streams.
  void SetReplyHandler(ActionReplyHandler handler) override;
  absl::Status Submit(const ObservationRequest& request) override;
  void NoteParked(absl::Span<const int> envs, bool parked) override;
  // Sync mode: hears each version the server serves (at once with the latest
  // one heard, if any), in order, from one thread at a time.
  void SetVersionHandler(std::function<void(uint64_t)> handler);
  // Half-closes every stream and waits for them to end.
  void Close();
  // OK unless the channel has failed (see the banner).
  absl::Status status() const;
  ObservationClientStats stats() const;

  struct Stream;

 private:
  struct Target;
  struct EnvSlot;
  struct Retry;

  GrpcObservationChannel(const ObservationClientOptions& options,
                         const NetOptions& net);
  void Maintain();
  void ReconnectDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends env's current request on a live stream, or parks it.
  void Dispatch(int env) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteNext(Stream* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a notice of the parked envs (written with the state at its turn).
  void QueueNotice(Stream* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnVersion(uint64_t version);
  // The stream is gone: its envs fail over. True when the caller must
  // RemoveHold on it (outside the lock).
  bool Lost(Stream* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnWriteDone(Stream* s, bool ok);
  void OnReadDone(Stream* s, bool ok);
  void OnStreamDone(Stream* s, const absl::Status& status);
  void FailLocked(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int ServersUp() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // live streams
  // The oldest version the live servers serve; none while one has not said.
  std::optional<uint64_t> OldestServedVersion() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ObservationClientOptions options_;
  const NetOptions net_;
  ActionReplyHandler handler_;  // set once, before the streams start
  std::thread maintainer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Target> targets_ ABSL_GUARDED_BY(mu_);
  std::vector<EnvSlot> envs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  std::deque<int> waiting_ ABSL_GUARDED_BY(mu_);  // envs with no live server
  std::vector<Retry> retries_ ABSL_GUARDED_BY(mu_);
  absl::Time none_up_since_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  ObservationClientStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<char> parked_ ABSL_GUARDED_BY(mu_);  // sync: per local env
  // Version notices: delivered under their own lock, never under mu_ (the
  // handler resumes envs, which calls NoteParked and Submit).
  std::mutex version_mu_;
  std::function<void(uint64_t)> on_version_ ABSL_GUARDED_BY(version_mu_);
  uint64_t served_version_ ABSL_GUARDED_BY(version_mu_) = 0;
  bool have_version_ ABSL_GUARDED_BY(version_mu_) = false;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_OBSERVATION_CLIENT_H_
