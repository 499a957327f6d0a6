// `rl-vla3 serve learner`: one learner rank as its gRPC service (segments in,
// weights out, the roster), in the data-parallel group when there are ranks.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/channels/weight_channel.h"
#include "runtime/config_schema.h"
#include "runtime/file_lock.h"
#include "runtime/rate_meter.h"
#include "runtime/stop_signal.h"
#include "services/learner/c10d_reducer.h"
#include "services/learner/gradient_reducer.h"
#include "services/learner/learner.h"
#include "services/net/learner_service.h"
#include "services/options/engine_config.h"
#include "services/options/run_settings.h"
#include "services/runs/serve_role.h"

namespace rlvla3 {
namespace {

constexpr int kExitOk = 0;
using Clock = std::chrono::steady_clock;

// The roles silent past the timeout, for a progress line ("" if none).
std::string SilentRoles(const RosterService& roster) {
  std::string out;
  const v1::RoleRoster now = roster.Snapshot();
  for (const v1::RosterEntry& e : now.roles()) {
    if (!e.silent()) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", e.status().role(), " ",
                    e.address(), " (", static_cast<int>(e.silent_s()), " s)");
  }
  return out;
}

// This process's place in the data-parallel learner (WORLD_SIZE ranks, as
// torchrun's variables say; alone without them): the group, joined.
absl::StatusOr<std::unique_ptr<GradientReducer>> JoinLearnerGroup(
    const RoleTimings& t) {
  return JoinProcessGroupFromEnvironment(
      t.learner_backend, absl::Seconds(t.collective_timeout_s),
      /*alone_is_local=*/true, [](const ProcessGroupOptions& o) {
        spdlog::info("learner: rank {} of {} joining the group at {}:{} ({})",
                     o.rank, o.world_size, o.master_addr, o.master_port,
                     o.backend);
      });
}

// What the learner tells every role that asks (GetRunSettings).
v1::RunSettings RunSettingsOf(const LocalEngineOptions& o,
                              const RunLayout& layout) {
  v1::RunSettings settings;
  FillRunSettings(o, layout, &settings);
  return settings;
}

// One writer per rank and run folder (a second `up` or `train` on it is
// refused, exit 2), held until this process ends.
absl::StatusOr<FileLock> HoldRunFolder(const RoleSetup& s, int rank) {
  return FileLock::Acquire(absl::StrCat(
      std::filesystem::path(s.checkpoint_dir).parent_path().string(),
      rank == 0 ? "/learner.lock"
                : absl::StrCat("/learner-rank-", rank, ".lock")));
}

// The segment intake of this rank: sized for every worker's segments.
LearnerServiceOptions ServiceOptionsOf(const RoleSetup& s,
                                       const RunLayout& layout, int rank) {
  LearnerServiceOptions so;
  so.segments.shape = s.options.segment_shape;
  so.segments.segment_count = s.options.segment_count * s.workers;
  so.segments.limits = SegmentLimitsOf(s.options, layout);
  so.segments.version_slack = rank > 0 ? 1 : 0;
  return so;
}

// What GetStatus and the heartbeats say of the learner (its counters, its
// trained samples per second as `rate` last measured them).
void ReportStatus(LearnerService* service, MetricsRegistry* metrics,
                  Learner* learner, RateMeter* rate) {
  Counter* trained = &metrics->counter("trained_samples");
  Counter* steps = &metrics->counter("optimizer_steps");
  Counter* expired = &metrics->counter("expired_episodes");
  Counter* dropped = &metrics->counter("dropped_samples");
  Counter* aged_out = &metrics->counter("aged_out_samples");
  service->SetStatusSource([=](v1::RoleStatus* st) {
    st->set_trained_samples(trained->value());
    st->set_dropped_samples(dropped->value());
    st->set_aged_out_samples(aged_out->value());
    st->set_discarded_segments(expired->value());
    st->set_optimizer_steps(steps->value() + learner->steps_restored());
    st->set_trained_samples_per_s(rate->per_s());
  });
}

}  // namespace

int ServeLearner(const ServeFlags& f, RoleSetup& s) {
  absl::StatusOr<std::unique_ptr<GradientReducer>> group =
      JoinLearnerGroup(s.timings);
  if (!group.ok()) return FailRole("learner", group.status());
  absl::StatusOr<FileLock> lock = HoldRunFolder(s, (*group)->rank());
  if (!lock.ok()) return FailRole("learner", lock.status());
  absl::StatusOr<LearnerRoleOptions> role =
      LearnerProcessOptions(s, group->get());
  if (!role.ok()) return FailRole("learner", role.status());
  const LearnerRoleOptions& lo = *role;
  MetricsRegistry metrics;
  absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> endpoint =
      ServeMetrics(s, "learner", absl::StrCat((*group)->rank()), &metrics);
  if (!endpoint.ok()) return FailRole("learner", endpoint.status());
  StageTimeline timeline(false);
  LocalWeightChannel<Policy> weights;
  const RunLayout layout{s.workers, s.route_block, (*group)->world_size()};
  LearnerService service(ServiceOptionsOf(s, layout, (*group)->rank()), s.net,
                         &weights, &metrics);
  Learner learner(s.parts.policy, lo, s.parts.version, &service.segments(),
                  &weights, &metrics, &timeline);
  service.SetVersionSource([&learner] { return learner.version(); });
  learner.SetHeldVersionSource(
      [&service] { return service.highest_held_version(); });
  service.SetRunSettings(RunSettingsOf(s.options, layout));
  Counter& trained = metrics.counter("trained_samples");
  Counter& steps = metrics.counter("optimizer_steps");
  RateMeter rate;
  ReportStatus(&service, &metrics, &learner, &rate);
  RosterService roster(s.net, absl::Seconds(s.timings.role_timeout_s),
                       s.limits.max_roster_roles);
  roster.SetStarvedSource([&learner] { return learner.starved(); });
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      StartRoleServer(f.listen, s, s.limits.learner_receive_bytes,
                      {service.service(), &roster});
  if (!server.ok()) return FailRole("learner", server.status());
  learner.Start([&service] { service.Close(); },
                [](const LearnerStepStats&) {});
  Announce("learner", f.listen, (*server)->port());
  spdlog::info(
      "learner: rank {} of {}: {} of the global batch from {} "
      "rollout worker(s)",
      (*group)->rank(), (*group)->world_size(), lo.core.global_units,
      s.workers);
  RunUntil(
      f.duration_s, s.timings.metrics_interval_s,
      [&] { return learner.stopping() || learner.done(); },
      [&] {
        rate.Tick(trained.value());
        spdlog::info(
            "learner: version {}, {} steps, {} samples ({:.0f}/s), "
            "{} segments waiting, {} roles reporting",
            learner.version(), steps.value(), trained.value(), rate.per_s(),
            service.segments().depth(), roster.Snapshot().roles_size());
        if (const std::string quiet = SilentRoles(roster); !quiet.empty()) {
          spdlog::warn("learner: silent past cluster.role_timeout_s: {}",
                       quiet);
        }
      });
  (*server)->Shutdown(absl::Seconds(1));
  service.Close();
  learner.Stop();
  const absl::Status st = learner.Wait();
  if (!st.ok() && StopSignalled() && (*group)->world_size() > 1) {
    // Asked to stop: a peer that stopped first ends this rank's collective.
    spdlog::info("learner: rank {} stopped with its group ({})",
                 (*group)->rank(), std::string(st.message()));
  } else if (!st.ok()) {
    return FailRole("learner", st);
  }
  spdlog::info("learner: stopped at version {} after {} optimizer steps",
               learner.version(), steps.value());
  return kExitOk;
}

}  // namespace rlvla3
