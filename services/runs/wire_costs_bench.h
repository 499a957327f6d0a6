// File: services/runs/wire_costs_bench.h
// -----------------------------------------------------------------------------
// The wire between the roles' processes, for the stage-cost profile's "wire"
// (services/plan/stage_costs.h): what `up` adds to a run that `train` does
// not, measured on loopback in this one process.
//   observation  the run's observations around a real gRPC Act stream
//                (GrpcObservationChannel -> ObservationServer), each answered
//                at once with a reply of the run's shape by a thread that
//                stands in for the inference actor: the process's CPU per
//                round trip with every env in flight, and the wall time of a
//                lone round trip beyond its CPU
//   segment      a full segment of the run's shape encoded, serialized,
//                parsed and decoded with every check (per sample)
//   weights      the policy's weights encoded in chunks, serialized, parsed
//                and assembled (per version, one server)
//
// Example:
//   WireCosts w;
//   absl::Status s = MeasureWireCosts(inputs, &w);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_WIRE_COSTS_BENCH_H_
#define RLVLA3_SERVICES_RUNS_WIRE_COSTS_BENCH_H_

#include "absl/status/status.h"
#include "policies/trainable_policy.h"
#include "runtime/channels/rollout_segment.h"
#include "services/plan/stage_costs.h"

namespace rlvla3 {

struct WireBenchInputs {
  SegmentShape shape;     // the run's
  int envs = 8;           // observations in flight
  int max_batch = 8;      // replies per answered batch
  int execute_steps = 1;  // frames per decision
  TrainablePolicy* policy = nullptr;
  double seconds = 1;  // per measured point
};

absl::Status MeasureWireCosts(const WireBenchInputs& in, WireCosts* out);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_WIRE_COSTS_BENCH_H_
