// Starts the three roles as real `rl-vla3 serve` processes on loopback, with
// a shared token, and checks what a user of the services relies on: they
// train together without a sample dropped as stale, answer standard health
// checks, refuse calls without the token, answer a malformed observation with
// INVALID_ARGUMENT naming the field while serving everyone else, refuse every
// kind of malformed segment naming its field while the learner trains on, tell
// a client the run's settings, answer observations pending when a client
// half-closes, and stop cleanly on SIGTERM.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/grpc_common.h"
#include "services/net/role_status.h"
#include "services/net/wire_format.h"
#include "tests/role_process.h"
#include "tests/services/net/bad_segments.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

using testutil::RoleProcess;

constexpr char kToken[] = "serve-test-token-1234";

std::vector<std::string> ConfigArgs() {
  return {"--config", RLVLA3_SOURCE_DIR "/configs/bench_cpu.yaml",
          "--set",    "env.num_envs=4",
          "--set",    "rl.rollouts_per_step=1",
          "--set",    "metrics.interval_s=1"};
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testutil::TestDir;
    const std::vector<std::string> env = {std::string("RLVLA3_TOKEN=") +
                                          kToken};
    auto args = [](std::vector<std::string> a) {
      std::vector<std::string> c = ConfigArgs();
      a.insert(a.end(), c.begin(), c.end());
      return a;
    };
    // The learner's run folder (its checkpoints) is the test's own.
    learner_ =
        new RoleProcess(RLVLA3_BINARY,
                        args({"serve", "learner", "--listen", "127.0.0.1:0",
                              "--set", "run.out_dir=" + dir_->File("runs")}),
                        env, dir_->File("learner"));
    ASSERT_TRUE(learner_->WaitReady(120)) << learner_->Log();
    inference_ =
        new RoleProcess(RLVLA3_BINARY,
                        args({"serve", "inference", "--listen", "127.0.0.1:0",
                              "--learner", learner_->address()}),
                        env, dir_->File("inference"));
    ASSERT_TRUE(inference_->WaitReady(120)) << inference_->Log();
    // A second inference server no worker uses: every env id is free for the
    // test's own observations.
    spare_inference_ =
        new RoleProcess(RLVLA3_BINARY,
                        args({"serve", "inference", "--listen", "127.0.0.1:0",
                              "--learner", learner_->address()}),
                        env, dir_->File("spare_inference"));
    ASSERT_TRUE(spare_inference_->WaitReady(120)) << spare_inference_->Log();
    rollout_ =
        new RoleProcess(RLVLA3_BINARY,
                        args({"serve", "rollout", "--listen", "127.0.0.1:0",
                              "--learner", learner_->address(), "--inference",
                              inference_->address(), "--worker", "0"}),
                        env, dir_->File("rollout"));
    ASSERT_TRUE(rollout_->WaitReady(120)) << rollout_->Log();
  }
  static void TearDownTestSuite() {
    delete rollout_;
    delete inference_;
    delete spare_inference_;
    delete learner_;
    delete dir_;
  }

  static NetOptions Net(bool with_token = true) {
    NetOptions n;
    if (with_token) n.token = kToken;
    return n;
  }
  static absl::StatusOr<v1::RoleStatus> Status(Role role,
                                               const std::string& target,
                                               bool with_token = true) {
    return QueryRoleStatus(role, target, Net(with_token));
  }

  static testutil::TestDir* dir_;
  static RoleProcess* learner_;
  static RoleProcess* inference_;
  static RoleProcess* spare_inference_;
  static RoleProcess* rollout_;
};

testutil::TestDir* ServeTest::dir_ = nullptr;
RoleProcess* ServeTest::learner_ = nullptr;
RoleProcess* ServeTest::inference_ = nullptr;
RoleProcess* ServeTest::spare_inference_ = nullptr;
RoleProcess* ServeTest::rollout_ = nullptr;

TEST_F(ServeTest, HealthChecksAnswerServing) {
  for (RoleProcess* p : {learner_, inference_, spare_inference_, rollout_}) {
    // Health is open to probes: no token.
    absl::StatusOr<std::string> h = CheckHealth(p->address(), Net(false));
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(*h, "SERVING") << p->address();
  }
}

TEST_F(ServeTest, ThreeProcessRunTrainsAndVersionsReachTheWorkers) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  uint64_t steps = 0, rollout_version = 0, inference_version = 0, dropped = 0,
           aged_out = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto l = Status(Role::kLearner, learner_->address());
    auto i = Status(Role::kInference, inference_->address());
    auto r = Status(Role::kRollout, rollout_->address());
    ASSERT_TRUE(l.ok() && i.ok() && r.ok())
        << l.status() << i.status() << r.status() << rollout_->Log();
    steps = l->optimizer_steps();
    dropped = l->dropped_samples();
    aged_out = l->aged_out_samples();
    inference_version = i->policy_version();
    rollout_version = r->policy_version();
    if (steps >= 4 && inference_version >= 1 && rollout_version >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_GE(steps, 4u) << learner_->Log();
  EXPECT_GE(inference_version, 1u) << inference_->Log();
  EXPECT_GE(rollout_version, 1u) << rollout_->Log();
  // Parked envs resume on the version their inference server serves: none
  // of their decisions is staler than rl.max_policy_lag allows. (Resuming on
  // the learner's notice, each segment's first decisions ran on the previous
  // weights and the learner dropped whole segments from the third step on.)
  // Samples that arrived within the bound but waited at the learner until a
  // step moved the version past it are dropped too (aged out): the learner
  // was behind, not the rollout.
  EXPECT_LE(aged_out, dropped);
  EXPECT_EQ(dropped - aged_out, 0u) << learner_->Log();
}

TEST_F(ServeTest, CallWithoutTokenIsUnauthenticated) {
  auto s = Status(Role::kLearner, learner_->address(), /*with_token=*/false);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnauthenticated);
  auto ok = Status(Role::kLearner, learner_->address());
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// The test config's shapes (64x64 cameras, P 8, K 4, A 7).
const WireShape kShape{64, 64, {"agentview", "wrist"}, 8, 4, 7};

// A well-formed observation of task 0 for global env `env`.
v1::Observation ObservationFor(int env) {
  const std::vector<uint8_t> image(64 * 64 * 3, 128);
  const std::vector<float> proprio(8, 0.1f);
  const ObservationRequest r{
      0, 0, {image.data(), image.data()}, proprio.data(), 0};
  v1::Observation m;
  EncodeObservation(r, env, kShape, &m);
  return m;
}

TEST_F(ServeTest, MalformedObservationGetsInvalidArgumentOthersAreServed) {
  auto stub = v1::Inference::NewStub(
      MakeChannel(spare_inference_->address(), Net()).value());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, Net(), absl::Seconds(60));
  auto stream = stub->Act(&ctx);
  const v1::Observation good = ObservationFor(2);

  v1::Observation nan = good;
  nan.set_env_id(0);
  float bad = std::numeric_limits<float>::quiet_NaN();
  nan.mutable_proprio()->mutable_data()->replace(
      8, 4, reinterpret_cast<char*>(&bad), 4);
  v1::Observation small = good;
  small.set_env_id(1);
  small.mutable_images(0)->mutable_rgb()->set_shape(0, 32);
  v1::Observation wrong_env = good;
  wrong_env.set_env_id(1000);

  v1::ActionReply reply;
  ASSERT_TRUE(stream->Write(nan));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), 3);  // INVALID_ARGUMENT
  EXPECT_NE(reply.error_message().find("observation.proprio"),
            std::string::npos)
      << reply.error_message();
  ASSERT_TRUE(stream->Write(small));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), 3);
  EXPECT_NE(reply.error_message().find("observation.images[0].rgb"),
            std::string::npos)
      << reply.error_message();
  ASSERT_TRUE(stream->Write(wrong_env));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), 3);
  EXPECT_NE(reply.error_message().find("observation.env_id"),
            std::string::npos);
  // The same stream, a well-formed observation: served.
  ASSERT_TRUE(stream->Write(good));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), 0) << reply.error_message();
  EXPECT_EQ(reply.env_id(), 2u);
  EXPECT_TRUE(CheckReply(reply, kShape).ok()) << CheckReply(reply, kShape);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // Every other client kept being served: the rollout worker still steps.
  EXPECT_TRUE(spare_inference_->running());
  auto before = Status(Role::kRollout, rollout_->address());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto after = Status(Role::kRollout, rollout_->address());
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_GT(after->env_frames(), before->env_frames()) << rollout_->Log();
  EXPECT_TRUE(inference_->running());
}

// A valid PPO segment in the run's shapes: 4 decisions, an episode ending at
// decision 1, the last decision mid-episode with its bootstrap row, version 0.
v1::TrajectorySegment ValidSegmentFor(const v1::RunSettings& r) {
  SegmentShape sh;
  sh.height = static_cast<int>(r.image_height());
  sh.width = static_cast<int>(r.image_width());
  sh.chunk = static_cast<int>(r.chunk());
  sh.action_dim = static_cast<int>(r.action_dim());
  sh.proprio_dim = static_cast<int>(r.proprio_dim());
  sh.capacity = static_cast<int>(r.max_segment_decisions());
  sh.cameras.assign(r.cameras().begin(), r.cameras().end());
  RolloutSegment s(sh);
  s.n = 4;
  s.has_bootstrap = true;
  for (size_t i = 0; i < s.images.size(); ++i) {
    s.images[i] = static_cast<uint8_t>(i % s.camera_bytes % 251);
  }
  for (int t = 0; t < s.n; ++t) {
    for (int k = 0; k < sh.chunk; ++k) s.log_probs_at(t)[k] = -5.0f;
    s.terminal[t] = t == 1;
    s.rewards[t] = t == 1 ? 1.0f : 0.0f;
    s.executed[t] = 1;
    s.versions[t] = 0;
  }
  s.task = 1;
  v1::TrajectorySegment m;
  EncodeSegment(s, /*global_env=*/2, &m);
  return m;
}

absl::StatusOr<v1::RunSettings> RunSettings(const std::string& learner,
                                            const NetOptions& net) {
  auto stub = v1::Learner::NewStub(MakeChannel(learner, net).value());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, net, absl::Seconds(10));
  v1::RunSettings out;
  const grpc::Status s = stub->GetRunSettings(&ctx, v1::StatusRequest(), &out);
  if (!s.ok()) return FromGrpcStatus(s, "GetRunSettings");
  return out;
}

// Pushes `segments` on one PushSegments call and ends it.
grpc::Status PushOnOneCall(const std::string& learner, const NetOptions& net,
                           const std::vector<v1::TrajectorySegment>& segments,
                           v1::PushSegmentsReply* reply) {
  auto stub = v1::Learner::NewStub(MakeChannel(learner, net).value());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, net, absl::Seconds(60));
  auto writer = stub->PushSegments(&ctx, reply);
  for (const v1::TrajectorySegment& m : segments) {
    if (!writer->Write(m)) break;  // the learner ended the call
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST_F(ServeTest, RunSettingsAnswerFromALiveRun) {
  // The published version first: the learner's own version (what the
  // settings carry) is never behind the one it has published.
  auto l = Status(Role::kLearner, learner_->address());
  ASSERT_TRUE(l.ok()) << l.status();
  absl::StatusOr<v1::RunSettings> r = RunSettings(learner_->address(), Net());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->image_height(), 64u);
  EXPECT_EQ(r->image_width(), 64u);
  ASSERT_EQ(r->cameras_size(), 2);
  EXPECT_EQ(r->cameras(0), "agentview");
  EXPECT_EQ(r->proprio_dim(), 8u);
  EXPECT_EQ(r->chunk(), 4u);
  EXPECT_EQ(r->action_dim(), 7u);
  EXPECT_EQ(r->action_bins(), 256u);
  EXPECT_EQ(r->execute_steps(), 4u);
  EXPECT_EQ(r->max_segment_decisions(), 16u);
  EXPECT_EQ(r->num_envs(), 4u);          // one worker of 4 envs
  ASSERT_EQ(r->instructions_size(), 4);  // bench_cpu's env.tasks, in order
  EXPECT_EQ(r->task_names(1), "open_the_drawer");
  EXPECT_EQ(r->algorithm(), "ppo");
  EXPECT_EQ(r->mode(), "async");
  EXPECT_EQ(r->max_policy_lag(), 1u);
  EXPECT_EQ(r->global_batch(), 4u * 16u);
  EXPECT_EQ(r->units_per_env_per_version(), 16u);
  EXPECT_EQ(r->learner_ranks(), 1u);
  EXPECT_GE(r->policy_version(), l->policy_version());
  // Without the token: refused like every other call.
  EXPECT_EQ(RunSettings(learner_->address(), Net(false)).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(ServeTest, ValidSegmentsAreAcceptedAndCountedPerCall) {
  absl::StatusOr<v1::RunSettings> r = RunSettings(learner_->address(), Net());
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::TrajectorySegment good = ValidSegmentFor(*r);
  v1::PushSegmentsReply reply;
  const grpc::Status s =
      PushOnOneCall(learner_->address(), Net(), {good, good}, &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reply.accepted(), 2u);  // this call's, not the learner's total
  EXPECT_EQ(reply.rejected_invalid(), 0u);
}

TEST_F(ServeTest, RepliesPendingWhenTheClientHalfClosesAreDelivered) {
  auto stub = v1::Inference::NewStub(
      MakeChannel(spare_inference_->address(), Net()).value());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, Net(), absl::Seconds(60));
  auto stream = stub->Act(&ctx);
  for (int env = 0; env < 4; ++env) {
    ASSERT_TRUE(stream->Write(ObservationFor(env)));
  }
  stream->WritesDone();  // at once: the replies are still being inferred
  std::vector<bool> answered(4, false);
  v1::ActionReply reply;
  while (stream->Read(&reply)) {
    EXPECT_EQ(reply.error_code(), 0) << reply.error_message();
    ASSERT_LT(reply.env_id(), 4u);
    answered[reply.env_id()] = true;
  }
  EXPECT_TRUE(stream->Finish().ok());
  for (int env = 0; env < 4; ++env) EXPECT_TRUE(answered[env]) << env;
}

// One malformed segment per field, each pushed to the live learner after a
// valid one on the same call.
class SegmentFieldTest
    : public ServeTest,
      public ::testing::WithParamInterface<testutil::BadSegment> {};

TEST_P(SegmentFieldTest, RefusedNamingTheFieldAndTheLearnerTrainsOn) {
  absl::StatusOr<v1::RunSettings> r = RunSettings(learner_->address(), Net());
  ASSERT_TRUE(r.ok()) << r.status();
  auto before = Status(Role::kLearner, learner_->address());
  ASSERT_TRUE(before.ok()) << before.status();
  const v1::TrajectorySegment good = ValidSegmentFor(*r);
  v1::TrajectorySegment bad = good;
  GetParam().mutate(&bad);
  v1::PushSegmentsReply reply;
  const grpc::Status s =
      PushOnOneCall(learner_->address(), Net(), {good, bad, good}, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find(GetParam().field), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("segment 2 of this call; 1 accepted"),
            std::string::npos)
      << s.error_message();
  // Counted, and the learner trains on: a new version within a minute.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  absl::StatusOr<v1::RoleStatus> after = before;
  while (std::chrono::steady_clock::now() < end) {
    after = Status(Role::kLearner, learner_->address());
    ASSERT_TRUE(after.ok()) << after.status() << learner_->Log();
    if (after->policy_version() > before->policy_version()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(after->invalid_requests(), before->invalid_requests() + 1);
  EXPECT_GT(after->policy_version(), before->policy_version())
      << learner_->Log();
  EXPECT_TRUE(learner_->running()) << learner_->Log();
}

INSTANTIATE_TEST_SUITE_P(
    EveryField, SegmentFieldTest,
    ::testing::ValuesIn(testutil::BadSegments(
        {/*num_envs=*/4, /*num_tasks=*/4, /*capacity=*/16, /*execute=*/4})),
    [](const ::testing::TestParamInfo<testutil::BadSegment>& info) {
      return info.param.name;
    });

TEST_F(ServeTest, RolesStopCleanlyOnSigterm) {
  for (RoleProcess* p : {rollout_, inference_, spare_inference_, learner_}) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(), 0) << p->Log();
  }
}

}  // namespace
}  // namespace rlvla3
