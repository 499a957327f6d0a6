// File: services/net/weight_server.h
// -----------------------------------------------------------------------------
// The learner's end of level 3 over gRPC (the server side of
// weight_client.h). It subscribes to the learner's weight channel; one
// encoder thread encodes each published version once, in chunks, and every
// SubscribeWeights call gets a reactor that sends it the latest version. A
// slow subscriber finishes the version it is sending and then jumps to the
// latest (versions in between are skipped: overflow policy latest-wins).
// Versions-only subscribers (rollout workers) get one small message per
// version. A version with a message over the network's size limit is logged
// and not sent.
//
// Its state (the encoded version, the subscribers) is its own; LearnerService
// routes the Learner service's SubscribeWeights calls here after checking the
// token.
//
// Example:
//   WeightServer weights_out(options, &weights);  // encodes from now on
//   ... in the service: return weights_out.StartCall(*request);
//   weights_out.Close();  // the encoder stops
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_WEIGHT_SERVER_H_
#define RLVLA3_SERVICES_NET_WEIGHT_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "policies/policy.h"
#include "runtime/channels/weight_channel.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {
namespace v1 {
class WeightSubscription;
class WeightUpdate;
}  // namespace v1

struct WeightServerOptions {
  size_t chunk_bytes = 4u << 20;          // weight chunk size
  int64_t max_message_bytes = 64u << 20;  // a larger chunk is not sent
};

class WeightServer {
 public:
  // Subscribes to `weights` (publications from now on are served; the
  // latest one already published too).
  WeightServer(const WeightServerOptions& options,
               WeightChannel<Policy>* weights);
  ~WeightServer();
  WeightServer(const WeightServer&) = delete;
  WeightServer& operator=(const WeightServer&) = delete;

  // The reactor of one SubscribeWeights call (the caller checked its token).
  grpc::ServerWriteReactor<v1::WeightUpdate>* StartCall(
      const v1::WeightSubscription& request);
  // The newest version encoded (0: none yet).
  uint64_t encoded_version() const;
  // The highest version a subscriber said it holds (WeightSubscription's
  // have_version; 0: none). Above the learner's own version, it is the
  // mark of a learner restarted below what its subscribers serve: the
  // learner must go on above it (Learner::SetHeldVersionSource), or they
  // never take its weights.
  uint64_t highest_held_version() const;
  // Stops the encoder; calls in progress end when their clients go.
  void Close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_WEIGHT_SERVER_H_
