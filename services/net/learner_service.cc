#include "services/net/learner_service.h"

#include <chrono>

#include "rlvla3/v1/services.grpc.pb.h"

namespace rlvla3 {

struct LearnerService::Impl final : public v1::Learner::CallbackService {
  Impl(const LearnerServiceOptions& o, const NetOptions& n,
       WeightChannel<Policy>* w, MetricsRegistry* metrics)
      : net(n),
        weights(w),
        segments(o.segments, metrics),
        weights_out(WeightsOptions(o.weights, n), w),
        start(std::chrono::steady_clock::now()) {}
  static WeightServerOptions WeightsOptions(WeightServerOptions o,
                                            const NetOptions& n) {
    o.max_message_bytes = n.max_message_bytes;
    return o;
  }

  grpc::ServerReadReactor<v1::TrajectorySegment>* PushSegments(
      grpc::CallbackServerContext* ctx, v1::PushSegmentsReply* reply) override {
    if (grpc::Status auth = CheckToken(ctx, net); !auth.ok()) {
      return RefuseCall<grpc::ServerReadReactor<v1::TrajectorySegment>>(auth);
    }
    return segments.StartCall(reply);
  }
  grpc::ServerWriteReactor<v1::WeightUpdate>* SubscribeWeights(
      grpc::CallbackServerContext* ctx,
      const v1::WeightSubscription* request) override {
    if (grpc::Status auth = CheckToken(ctx, net); !auth.ok()) {
      return RefuseCall<grpc::ServerWriteReactor<v1::WeightUpdate>>(auth);
    }
    return weights_out.StartCall(*request);
  }
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::StatusRequest*,
                                      v1::RoleStatus* out) override {
    return AnswerNow(ctx, net, [&] {
      out->set_role("learner");
      out->set_running(!segments.closed());
      out->set_policy_version(weights->version());
      out->set_uptime_s(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      out->set_queue_depth(static_cast<uint32_t>(segments.depth()));
      out->set_invalid_requests(segments.rejected());
      if (status_fill) status_fill(out);
    });
  }
  grpc::ServerUnaryReactor* GetRunSettings(grpc::CallbackServerContext* ctx,
                                           const v1::StatusRequest*,
                                           v1::RunSettings* out) override {
    return AnswerNow(ctx, net, [&] {
      *out = settings;
      out->set_policy_version(LearnerVersion());
    });
  }
  uint64_t LearnerVersion() const {
    return version_source ? version_source() : weights->version();
  }

  const NetOptions net;
  WeightChannel<Policy>* weights;
  SegmentServer segments;
  WeightServer weights_out;
  const std::chrono::steady_clock::time_point start;
  // Set once, before the server starts.
  std::function<void(v1::RoleStatus*)> status_fill;
  std::function<uint64_t()> version_source;
  v1::RunSettings settings;
};

LearnerService::LearnerService(const LearnerServiceOptions& options,
                               const NetOptions& net,
                               WeightChannel<Policy>* weights,
                               MetricsRegistry* metrics)
    : impl_(std::make_unique<Impl>(options, net, weights, metrics)) {
  Impl* m = impl_.get();
  m->segments.SetVersionSource([m] { return m->LearnerVersion(); });
}

LearnerService::~LearnerService() { Close(); }

grpc::Service* LearnerService::service() { return impl_.get(); }

SegmentServer& LearnerService::segments() { return impl_->segments; }

void LearnerService::SetStatusSource(
    std::function<void(v1::RoleStatus*)> fill) {
  impl_->status_fill = std::move(fill);
}

void LearnerService::SetVersionSource(std::function<uint64_t()> version) {
  impl_->version_source = std::move(version);
}

void LearnerService::SetRunSettings(const v1::RunSettings& settings) {
  impl_->settings = settings;
}

uint64_t LearnerService::highest_held_version() const {
  return impl_->weights_out.highest_held_version();
}

void LearnerService::Close() {
  impl_->segments.Close();
  impl_->weights_out.Close();
}

}  // namespace rlvla3
