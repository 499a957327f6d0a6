// File: services/runs/stage_drivers.h
// -----------------------------------------------------------------------------
// The inference and learner stages alone, one unit of work per call, on the
// config's devices and precisions: what `rl-vla3 bench` times (each stage's
// limit) and what `bench --profile` traces. Both take the run's options as
// services/options builds them (the devices, precisions, batch size, the
// learner role's options and the segment shape). Inference: a batch of
// synthetic observations (staged as an actor stages them) to the device, Act
// under inference mode, the values back (the batch's host sync). Learner: the
// real LearnerCore over synthetic PPO segments, one global batch per Step, and
// the snapshot an inference server would take.
//
// Example:
//   InferenceStageDriver inference(engine_options, parts);
//   inference.Batch();                      // warm-up, then timed calls
//   LearnerStageDriver learner(engine_options, parts);
//   int64_t samples = learner.Step();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_STAGE_DRIVERS_H_
#define RLVLA3_SERVICES_RUNS_STAGE_DRIVERS_H_

#include <cstdint>
#include <memory>

#include "services/engine/local_engine.h"

namespace rlvla3 {

class InferenceStageDriver {
 public:
  InferenceStageDriver(const LocalEngineOptions& o, const EngineParts& parts);
  ~InferenceStageDriver();
  void Batch();
  int64_t batch_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class LearnerStageDriver {
 public:
  // Trains `parts.policy` itself (the bench's copy) with the run's learner
  // options, as PPO (synthetic segments form no GRPO groups), on segments of
  // the run's shape: one per env per global batch.
  LearnerStageDriver(const LocalEngineOptions& o, const EngineParts& parts);
  ~LearnerStageDriver();
  // One global batch: segments in, micro-batches, one optimizer step, the
  // publish snapshot. Returns the samples trained.
  int64_t Step();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_STAGE_DRIVERS_H_
