// The channels' wire formats: segments round-trip exactly and malformed ones
// are refused naming the field; weights round-trip across chunks into another
// policy, and a wrong kind, a corrupted byte or a different architecture is
// refused with an error that says which.
#include "services/net/wire_format.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "policies/tiny_vla_policy.h"
#include "rlvla3/v1/rollout.pb.h"
#include "services/net/weight_codec.h"
#include "tests/services/net/bad_segments.h"

namespace rlvla3 {
namespace {

SegmentShape Shape() {
  SegmentShape s;
  s.width = 8;
  s.height = 6;
  s.chunk = 3;
  s.capacity = 5;
  return s;
}

void Fill(RolloutSegment* s, int n, bool bootstrap) {
  s->n = n;
  s->has_bootstrap = bootstrap;
  for (size_t i = 0; i < s->images.size(); ++i) {
    s->images[i] = uint8_t(i * 7 + i / s->camera_bytes);
  }
  for (size_t i = 0; i < s->proprio.size(); ++i) s->proprio[i] = 0.5f * i;
  for (size_t i = 0; i < s->tokens.size(); ++i) s->tokens[i] = uint8_t(i);
  for (size_t i = 0; i < s->log_probs.size(); ++i) s->log_probs[i] = -0.1f * i;
  for (int t = 0; t < n; ++t) {
    s->values[t] = 0.25f * t;
    s->rewards[t] = t == n - 1 ? 1.0f : 0.0f;
    s->terminal[t] = t == n - 1;
    s->executed[t] = uint8_t(1 + t % 3);
    s->versions[t] = 40 + t;
  }
  s->env_id = 3;
  s->task = 2;
  s->run_id = 0xabcdef;
  s->index = 9;
  s->group = 77;
  s->episode_end = true;
  s->success = true;
  s->episode_return = 1.0f;
}

TEST(WireFormat, SegmentRoundTripsExactly) {
  RolloutSegment a(Shape()), b(Shape());
  Fill(&a, 4, /*bootstrap=*/true);
  v1::TrajectorySegment m;
  EncodeSegment(a, a.env_id, &m);
  ASSERT_TRUE(DecodeSegment(m, SegmentLimits{}, &b).ok())
      << DecodeSegment(m, SegmentLimits{}, &b);
  const size_t rows = 5 * a.camera_bytes;  // n + bootstrap
  for (int c = 0; c < 2; ++c) {
    EXPECT_TRUE(std::equal(a.camera_at(c, 0), a.camera_at(c, 0) + rows,
                           b.camera_at(c, 0)));
  }
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(a.values[t], b.values[t]);
    EXPECT_EQ(a.rewards[t], b.rewards[t]);
    EXPECT_EQ(a.terminal[t], b.terminal[t]);
    EXPECT_EQ(a.executed[t], b.executed[t]);
    EXPECT_EQ(a.versions[t], b.versions[t]);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(a.log_probs_at(t)[k], b.log_probs_at(t)[k]);
    }
    EXPECT_EQ(0, std::memcmp(a.tokens_at(t), b.tokens_at(t), 3 * 7));
  }
  EXPECT_EQ(b.n, 4);
  EXPECT_TRUE(b.has_bootstrap);
  EXPECT_EQ(b.run_id, 0xabcdefu);
  EXPECT_EQ(b.index, 9);
  EXPECT_EQ(b.group, 77u);
  EXPECT_EQ(b.env_id, 3);
  EXPECT_EQ(b.task, 2);
  EXPECT_TRUE(b.episode_end && b.success);
}

// The run's cameras travel by name and in order, however many (issue 50):
// a segment of three round-trips, and one of another order or count is
// refused naming the cameras the run expects.
TEST(WireFormat, TheRunsCamerasTravelByNameInOrder) {
  SegmentShape sh = Shape();
  sh.cameras = {"agentview", "wrist", "sideview"};
  RolloutSegment a(sh), b(sh);
  Fill(&a, 3, /*bootstrap=*/true);
  v1::TrajectorySegment m;
  EncodeSegment(a, a.env_id, &m);
  ASSERT_EQ(m.images_size(), 3);
  EXPECT_EQ(m.images(2).name(), "sideview");
  ASSERT_TRUE(DecodeSegment(m, SegmentLimits{}, &b).ok())
      << DecodeSegment(m, SegmentLimits{}, &b);
  for (int c = 0; c < 3; ++c) {  // 3 decisions + the bootstrap, per camera
    EXPECT_EQ(m.images(c).name(), sh.cameras[c]);
    EXPECT_TRUE(std::equal(a.camera_at(c, 0),
                           a.camera_at(c, 0) + 4 * a.camera_bytes,
                           b.camera_at(c, 0)))
        << sh.cameras[c];
  }
  v1::TrajectorySegment reordered = m;
  reordered.mutable_images()->SwapElements(0, 2);
  RolloutSegment untouched(sh);
  absl::Status refused = DecodeSegment(reordered, SegmentLimits{}, &untouched);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "segment.images: expected cameras \"agentview\", \"wrist\", "
            "\"sideview\" in that order (RunSettings.cameras), got "
            "\"sideview\", \"wrist\", \"agentview\"");
  EXPECT_EQ(untouched.n, 0);
  RolloutSegment two(Shape());  // agentview, wrist
  const absl::Status s = DecodeSegment(m, SegmentLimits{}, &two);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "segment.images: expected cameras \"agentview\", \"wrist\" in that "
            "order (RunSettings.cameras), got \"agentview\", \"wrist\", "
            "\"sideview\"");
}

// An observation's cameras likewise: three by name, and another order, name
// or count refused naming the run's.
TEST(WireFormat, AnObservationsCamerasAreTheRunsByNameInOrder) {
  SegmentShape sh = Shape();
  sh.cameras = {"agentview", "wrist", "sideview"};
  RolloutSegment a(sh);
  Fill(&a, 3, /*bootstrap=*/true);
  WireShape ws;
  ws.height = sh.height;
  ws.width = sh.width;
  ws.cameras = sh.cameras;
  ObservationRequest r;
  r.task = 1;
  for (int c = 0; c < 3; ++c) r.images[c] = a.camera_at(c, 1);
  r.proprio = a.proprio_at(1);
  v1::Observation o;
  EncodeObservation(r, /*global_env=*/2, ws, &o);
  ASSERT_TRUE(CheckObservation(o, ws, 4, 2).ok())
      << CheckObservation(o, ws, 4, 2);
  const ObservationRequest view = ObservationView(o);
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(std::equal(view.images[c], view.images[c] + a.camera_bytes,
                           a.camera_at(c, 1)));
  }
  const std::string expected =
      "observation.images: expected cameras \"agentview\", \"wrist\", "
      "\"sideview\" in that order (RunSettings.cameras), got ";
  v1::Observation swapped = o;  // another order
  swapped.mutable_images()->SwapElements(1, 2);
  absl::Status bad = CheckObservation(swapped, ws, 4, 2);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), expected + "\"agentview\", \"sideview\", \"wrist\"");
  v1::Observation renamed = o;  // another name
  renamed.mutable_images(2)->set_name("overhead");
  bad = CheckObservation(renamed, ws, 4, 2);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), expected + "\"agentview\", \"wrist\", \"overhead\"");
  v1::Observation fewer = o;  // two where the run has three
  fewer.mutable_images()->RemoveLast();
  bad = CheckObservation(fewer, ws, 4, 2);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), expected + "\"agentview\", \"wrist\"");
  v1::Observation none = o;
  none.clear_images();
  EXPECT_EQ(CheckObservation(none, ws, 4, 2).message(), expected + "none");
  // A two-camera encoder reusing the message drops the third camera.
  WireShape two_cameras = ws;
  two_cameras.cameras = {"agentview", "wrist"};
  EncodeObservation(r, /*global_env=*/2, two_cameras, &o);
  EXPECT_EQ(o.images_size(), 2);
  EXPECT_TRUE(CheckObservation(o, two_cameras, 4, 2).ok());
  EXPECT_EQ(CheckObservation(o, ws, 4, 2).message(),
            expected + "\"agentview\", \"wrist\"");
}

// What a declared policy took travels as it declares (issue 50): float32
// samples of a Gaussian head round-trip bit for bit, and bins are checked
// against each dimension's count, whatever their width on the wire.
TEST(WireFormat, TakenActionsTravelAsDeclaredAndBinsAreCheckedPerDimension) {
  SegmentShape wide = Shape();
  wide.taken_bytes = 4;
  RolloutSegment a(wide), b(wide);
  Fill(&a, 4, true);
  float* taken = reinterpret_cast<float*>(a.tokens.data());
  const size_t n = a.tokens.size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) taken[i] = -0.37f * static_cast<float>(i);
  v1::TrajectorySegment m;
  EncodeSegment(a, a.env_id, &m);
  EXPECT_EQ(m.action_tokens().dtype(), v1::DTYPE_FLOAT32);
  ASSERT_TRUE(DecodeSegment(m, SegmentLimits{}, &b).ok());
  EXPECT_EQ(0,
            std::memcmp(a.tokens.data(), b.tokens.data(), 4 * a.taken_row()));
  // As bins (whole numbers below 512 in dimension 0, 2 in the others), the
  // samples are refused, naming the first value and its dimension.
  SegmentLimits bins;
  bins.bins = {512, 2, 2, 2, 2, 2, 2};
  for (size_t i = 0; i < n; ++i) taken[i] = (i % 7 == 0) ? 300.0f : 1.0f;
  EncodeSegment(a, a.env_id, &m);
  EXPECT_TRUE(DecodeSegment(m, bins, &b).ok());
  taken[8] = 2.0f;  // dimension 1 has bins 0 and 1
  EncodeSegment(a, a.env_id, &m);
  absl::Status s = DecodeSegment(m, bins, &b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "segment.action_tokens[8] = 2: not a bin of dimension 1 (whole "
            "numbers 0 to 1)");
  taken[8] = 0.5f;
  EncodeSegment(a, a.env_id, &m);
  EXPECT_FALSE(DecodeSegment(m, bins, &b).ok());
  // One byte per bin: a byte past a dimension's count is refused too.
  RolloutSegment c(Shape()), d(Shape());
  Fill(&c, 4, true);
  std::fill(c.tokens.begin(), c.tokens.end(), 1);
  c.tokens[3] = 2;
  EncodeSegment(c, c.env_id, &m);
  EXPECT_EQ(m.action_tokens().dtype(), v1::DTYPE_UINT8);
  s = DecodeSegment(m, bins, &d);
  EXPECT_NE(s.message().find("segment.action_tokens[3] = 2"), std::string::npos)
      << s;
}

TEST(WireFormat, MalformedSegmentIsRefusedNamingTheField) {
  RolloutSegment a(Shape()), b(Shape());
  Fill(&a, 4, true);
  v1::TrajectorySegment m;
  EncodeSegment(a, a.env_id, &m);
  v1::TrajectorySegment wrong = m;
  wrong.mutable_action_tokens()->set_shape(1, 4);
  absl::Status s = DecodeSegment(wrong, SegmentLimits{}, &b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("segment.action_tokens"), std::string::npos) << s;

  v1::TrajectorySegment nan = m;
  const float bad = std::numeric_limits<float>::infinity();
  nan.mutable_rewards()->mutable_data()->replace(
      0, 4, reinterpret_cast<const char*>(&bad), 4);
  s = DecodeSegment(nan, SegmentLimits{}, &b);
  EXPECT_NE(s.message().find("segment.rewards"), std::string::npos) << s;

  v1::TrajectorySegment too_long = m;
  too_long.set_decisions(6);  // capacity 5
  s = DecodeSegment(too_long, SegmentLimits{}, &b);
  EXPECT_NE(s.message().find("segment.decisions"), std::string::npos) << s;
}

// A valid PPO segment of the test shape: 4 decisions, an episode ending at
// decision 1, the last one mid-episode with its bootstrap row.
v1::TrajectorySegment ValidPpoSegment() {
  RolloutSegment a(Shape());
  Fill(&a, 4, /*bootstrap=*/true);
  for (int t = 0; t < 4; ++t) {
    a.terminal[t] = t == 1;
    a.executed[t] = 1;
    a.versions[t] = 7 + t;
  }
  a.episode_end = false;
  a.success = false;
  v1::TrajectorySegment m;
  EncodeSegment(a, /*global_env=*/5, &m);
  return m;
}

SegmentLimits TestLimits() {
  SegmentLimits l;
  l.num_envs = 8;
  l.num_tasks = 4;
  l.execute_steps = 3;
  l.max_version = 10;
  return l;
}

TEST(WireFormat, EachBadFieldIsRefusedNamingItAndNothingIsCopied) {
  const v1::TrajectorySegment valid = ValidPpoSegment();
  {
    RolloutSegment b(Shape());
    ASSERT_TRUE(DecodeSegment(valid, TestLimits(), &b).ok())
        << DecodeSegment(valid, TestLimits(), &b);
    EXPECT_EQ(b.env_id, 5);
  }
  const auto cases = testutil::BadSegments(
      {/*num_envs=*/8, /*num_tasks=*/4, /*capacity=*/5, /*execute=*/3});
  for (const testutil::BadSegment& bad : cases) {
    SCOPED_TRACE(bad.name);
    v1::TrajectorySegment m = valid;
    bad.mutate(&m);
    RolloutSegment b(Shape());
    const absl::Status s = DecodeSegment(m, TestLimits(), &b);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(bad.field), std::string::npos) << s;
    EXPECT_EQ(b.n, 0);
    EXPECT_EQ(b.images[0], 0);  // nothing copied
  }
}

TEST(WireFormat, VersionAheadOfTheLearnerIsRefusedAtItsBound) {
  v1::TrajectorySegment m = ValidPpoSegment();  // versions 7..10
  RolloutSegment b(Shape());
  SegmentLimits l = TestLimits();
  EXPECT_TRUE(DecodeSegment(m, l, &b).ok());
  l.max_version = 9;
  const absl::Status s = DecodeSegment(m, l, &b);
  EXPECT_NE(s.message().find("segment.policy_versions: element 3"),
            std::string::npos)
      << s;
}

TEST(WireFormat, GrpoSegmentsAreWholeEpisodesOrAnEmptyAbandonment) {
  SegmentLimits l = TestLimits();
  l.grpo = true;
  RolloutSegment a(Shape()), b(Shape());
  Fill(&a, 3, /*bootstrap=*/false);  // one episode, ends at decision 2
  for (int t = 0; t < 3; ++t) a.versions[t] = 1;
  v1::TrajectorySegment m;
  EncodeSegment(a, 2, &m);
  EXPECT_TRUE(DecodeSegment(m, l, &b).ok()) << DecodeSegment(m, l, &b);

  v1::TrajectorySegment cut = m;  // an episode split over two segments
  cut.set_ends_episode(false);
  cut.set_success(false);
  EXPECT_NE(DecodeSegment(cut, l, &b).message().find("segment.ends_episode"),
            std::string::npos);

  v1::TrajectorySegment early = m;  // a done before the last decision
  testutil::SetElement<uint8_t>(early.mutable_dones(), 0, 1);
  EXPECT_NE(DecodeSegment(early, l, &b).message().find("segment.dones"),
            std::string::npos);

  RolloutSegment empty(Shape());  // the env crashed: the episode abandoned
  empty.n = 0;
  empty.episode_end = true;
  EncodeSegment(empty, 2, &m);
  ASSERT_TRUE(DecodeSegment(m, l, &b).ok()) << DecodeSegment(m, l, &b);
  EXPECT_EQ(b.n, 0);
  l.grpo = false;  // PPO has no use for an empty segment
  EXPECT_NE(DecodeSegment(m, l, &b).message().find("segment.decisions"),
            std::string::npos);
}

TinyVLAOptions Small(int64_t d_model = 32) {
  return TinyVLAOptions()
      .vocab_size(20)
      .d_model(d_model)
      .heads(2)
      .layers(1)
      .grid(2)
      .stem_channels(8);
}

TEST(WeightCodec, WeightsRoundTripAcrossChunksIntoAnotherPolicy) {
  torch::manual_seed(1);
  TinyVLAPolicy a(TinyVLA(Small()), 0);
  torch::manual_seed(2);
  TinyVLAPolicy b(TinyVLA(Small()), 0);
  auto chunks = EncodeWeights(a.State(), a.kind(), 5, /*chunk_bytes=*/4096);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  ASSERT_GT(chunks->size(), 3u);  // really chunked
  WeightAssembler asm_("tiny_vla");
  for (const auto& c : *chunks) ASSERT_TRUE(asm_.Add(c).ok());
  ASSERT_TRUE(asm_.complete());
  absl::StatusOr<AssembledWeights> w = asm_.Take();
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->version, 5u);
  ASSERT_TRUE(b.LoadState(w->state).ok());
  auto sa = a.State(), sb = b.State();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_TRUE(torch::equal(sa[i].second, sb[i].second)) << sa[i].first;
  }
}

TEST(WeightCodec, WrongKindCorruptionAndArchitectureAreRefused) {
  torch::manual_seed(1);
  TinyVLAPolicy a(TinyVLA(Small()), 0);
  auto chunks = EncodeWeights(a.State(), a.kind(), 5, 1 << 20);
  ASSERT_TRUE(chunks.ok());
  WeightAssembler other("torchscript");
  absl::Status s = other.Add((*chunks)[0]);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'tiny_vla'"), std::string::npos) << s;

  v1::WeightUpdate corrupt = (*chunks)[0];
  std::string* data =
      corrupt.mutable_tensors(0)->mutable_tensor()->mutable_data();
  (*data)[0] = static_cast<char>((*data)[0] ^ 0x40);
  WeightAssembler check("tiny_vla");
  ASSERT_TRUE(check.Add(corrupt).ok());
  absl::StatusOr<AssembledWeights> w = check.Take();
  EXPECT_EQ(w.status().code(), absl::StatusCode::kDataLoss);

  TinyVLAPolicy wide(TinyVLA(Small(/*d_model=*/48)), 0);
  WeightAssembler ok("tiny_vla");
  ASSERT_TRUE(ok.Add((*chunks)[0]).ok());
  w = ok.Take();
  ASSERT_TRUE(w.ok());
  s = wide.LoadState(w->state);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("weights: '"), std::string::npos) << s;
}

}  // namespace
}  // namespace rlvla3
