// File: services/net/weight_client.h
// -----------------------------------------------------------------------------
// A subscriber to the learner's weight stream (level 3 over gRPC), for
// inference servers (whole weights) and rollout workers (versions only, for
// admission control). The stream is read by a reactor that only queues what
// arrives; one thread of the subscriber assembles chunks, verifies kind and
// checksum and calls `on_weights` (so loading weights never holds up gRPC),
// and reconnects with backoff (0.1 s doubling to 2 s) when the learner is
// gone, until Stop. A version refused (wrong kind, bad checksum) is the
// subscriber's status and is not delivered.
//
// Example:
//   WeightSubscriber::Callbacks cb;
//   cb.on_weights = [&](AssembledWeights w) { load, then publish locally; };
//   auto sub = WeightSubscriber::Start(options, net, std::move(cb));
//   ...  (*sub)->Stop();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_WEIGHT_CLIENT_H_
#define RLVLA3_SERVICES_NET_WEIGHT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/net/grpc_common.h"
#include "services/net/weight_codec.h"

namespace rlvla3 {

struct WeightClientOptions {
  std::string target;  // the learner, host:port
  bool versions_only = false;
  std::string policy_kind;    // what full weights must be for
  uint64_t have_version = 0;  // start after this version
};

class WeightSubscriber {
 public:
  struct Callbacks {
    // Versions only: every version heard of, on a gRPC thread; must not block.
    std::function<void(uint64_t)> on_version;
    // Whole weights, on the subscriber's thread; an error becomes status().
    std::function<absl::Status(AssembledWeights)> on_weights;
  };
  static absl::StatusOr<std::unique_ptr<WeightSubscriber>> Start(
      const WeightClientOptions& options, const NetOptions& net,
      Callbacks callbacks);
  ~WeightSubscriber();
  void Stop();
  // OK, or the last refusal / connection error (cleared by the next
  // version delivered).
  absl::Status status() const;
  uint64_t version() const;
  bool connected() const;

  struct Impl;

 private:
  explicit WeightSubscriber(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_WEIGHT_CLIENT_H_
