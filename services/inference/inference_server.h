// File: services/inference/inference_server.h
// -----------------------------------------------------------------------------
// InferenceServer: the inference role. It owns a dynamic batcher, its actor
// threads and each actor's weight slot, and nothing else. Actors pull
// observation requests from the level-1 source, form batches (B_max / T_max),
// run the policy and reply to every env of the batch with its action chunk,
// log-probs, value and the policy version. Between batches an actor takes the
// latest snapshot from the weight channel (level 3) if its version changed;
// it never waits for a publish.
//
// Sync mode is wiring, not a flag: with `full_batch` set, one actor forms a
// batch only once it holds full_batch() requests (every env not parked), so
// the envs step in lock-step.
//
// Example:
//   InferenceServer server(options, &channel, &weights, &metrics, &timeline);
//   server.Start([&] { channel.Close(); });   // on_stop closes the inputs
//   ...
//   server.Stop();  absl::Status s = server.Wait();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_INFERENCE_INFERENCE_SERVER_H_
#define RLVLA3_SERVICES_INFERENCE_INFERENCE_SERVER_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "policies/policy.h"
#include "runtime/channels/observation_channel.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/dynamic_batcher.h"
#include "runtime/metrics.h"
#include "runtime/role_threads.h"
#include "runtime/stage_timeline.h"

namespace rlvla3 {

struct InferenceServerOptions {
  int actors = 1;
  BatcherOptions batcher;
  // Barrier batching (sync mode): the number of requests a batch waits for.
  // Null: dynamic batching.
  std::function<int()> full_batch;
  int image_height = 128, image_width = 128, proprio_dim = 8;
  int cameras = 2;  // per observation, the run's order
  int chunk = 4, action_dim = 7;
  int taken_bytes = 1;  // SegmentShape::taken_bytes: 1 uint8 bins, 4 float32
  // Instruction tokens of each task row: text [T, L] int64, text_len [T]
  // (host tensors).
  at::Tensor text, text_len;
  // Where the policies published to the weight channel live (the publisher
  // puts them there): batches are sent there and the replies read back.
  at::Device device{at::kCPU};
  // Act under bf16 autocast (policies/device.h) on a bf16 copy of the
  // weights, cast once per version (policies/serving_weights.h).
  bool bf16 = false;
};

class InferenceServer {
 public:
  // `source`, `weights`, `metrics` and `timeline` must outlive the server.
  InferenceServer(const InferenceServerOptions& options,
                  ObservationSource* source, WeightChannel<Policy>* weights,
                  MetricsRegistry* metrics, StageTimeline* timeline);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Starts the actors. `on_stop` runs once when the server stops (an actor's
  // error or Stop) and must close the request source, so blocked actors end.
  void Start(std::function<void()> on_stop);
  void Stop() { threads_.Stop(); }
  bool stopping() const { return threads_.stopping(); }
  // Waits for the actors; the first error, or OK.
  absl::Status Wait() { return threads_.Wait(); }
  // Observations per batch since the start.
  HistogramSnapshot batch_sizes() const;

 private:
  // What an actor keeps from batch to batch: the policy it serves at
  // `version`, its bf16 serving copy (with options.bf16) and reply scratch.
  struct ActorState;
  absl::Status ActorLoop();
  absl::Status Infer(const std::vector<ObservationRequest>& batch,
                     ActorState& actor);

  InferenceServerOptions options_;
  ObservationSource* source_;
  WeightChannel<Policy>* weights_;
  StageTimeline* timeline_;
  Histogram* batch_size_;
  Histogram* request_dwell_ms_;
  Histogram* inference_ms_;
  StageTimer* stage_;
  RoleThreads threads_;  // last: stops and joins the actors first
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_INFERENCE_INFERENCE_SERVER_H_
