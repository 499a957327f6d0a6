// The inference role with real actor threads and a real TinyVLA: what each
// env gets back is what the policy chose for that env's observation, and
// what the learner recomputes from it (IS weight and ratio 1 on a fresh
// batch, whatever the sampling temperature and the executed chunk steps).
#include "services/inference/inference_server.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "policies/tiny_vla_policy.h"
#include "runtime/channels/observation_channel.h"
#include "runtime/channels/rollout_segment.h"
#include "runtime/channels/weight_channel.h"
#include "services/learner/learner_core.h"

namespace rlvla3 {
namespace {

constexpr int kEnvs = 6, kSize = 32, kChunk = 3, kDims = 7;

struct Got {
  uint64_t version = 0;
  std::vector<float> actions, log_probs;
  std::vector<uint8_t> tokens;
  float value = 0;
};

// Two actors, batches of up to 4, and two tasks whose instructions differ in
// length: one batch pads them.
InferenceServerOptions TwoTaskOptions() {
  InferenceServerOptions o;
  o.actors = 2;
  o.batcher.max_batch = 4;
  o.batcher.max_wait = absl::Milliseconds(20);
  o.image_height = o.image_width = kSize;
  o.chunk = kChunk;
  o.text =
      torch::tensor(std::vector<int64_t>{3, 4, 5, 0, 0, 0, 6, 7, 0, 0, 0, 0})
          .view({2, 6});
  o.text_len = torch::tensor(std::vector<int64_t>{3, 2});
  return o;
}

// The replies the channel delivered, by env.
struct Replies {
  std::mutex mu;
  std::map<int, Got> got;

  absl::Status Record(absl::Span<const ActionReply> replies) {
    std::lock_guard<std::mutex> lock(mu);
    for (const ActionReply& r : replies) {
      Got& g = got[r.env];
      g.version = r.version;
      g.actions.assign(r.actions, r.actions + kChunk * kDims);
      g.tokens.assign(r.tokens, r.tokens + kChunk * kDims);
      g.log_probs.assign(r.log_probs, r.log_probs + kChunk);
      g.value = r.value;
    }
    return absl::OkStatus();
  }

  // Fails the test if not every env has a reply within 60 s.
  void WaitForEveryEnv() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (static_cast<int>(got.size()) == kEnvs) break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "replies missing";
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
};

// What env `e` got is what `policy` chose for its observation: the version
// published, and tokens whose log-probabilities, value and actions the policy
// reproduces.
void ExpectThePolicysChoice(TinyVLAPolicy& policy,
                            const InferenceServerOptions& o,
                            const at::Tensor& images, const at::Tensor& proprio,
                            int e, const Got& g) {
  EXPECT_EQ(g.version, 7u);
  PolicyInput in;
  in.images = images[e].unsqueeze(0);
  in.proprio = proprio[e].unsqueeze(0);
  in.text = o.text[e % 2].unsqueeze(0);
  in.text_len = o.text_len[e % 2].unsqueeze(0);
  const at::Tensor tokens =
      torch::from_blob(const_cast<uint8_t*>(g.tokens.data()),
                       {1, kChunk, kDims}, torch::kByte)
          .to(torch::kLong);
  const EvalResult ev = policy.Evaluate(in, tokens);
  const at::Tensor log_probs =
      torch::from_blob(const_cast<float*>(g.log_probs.data()), {1, kChunk});
  EXPECT_TRUE(torch::allclose(log_probs, ev.log_probs, 1e-4, 1e-4))
      << "env " << e << ": " << log_probs << " vs " << ev.log_probs;
  EXPECT_NEAR(g.value, ev.values.item<float>(), 1e-4) << "env " << e;
  const at::Tensor actions = torch::from_blob(
      const_cast<float*>(g.actions.data()), {1, kChunk, kDims});
  EXPECT_TRUE(
      torch::equal(actions, TinyVLAPolicy::TokensToActions(tokens, 256)))
      << "env " << e;
}

// Serves one observation per env with `policy` (published as version 7) and
// returns what each env got.
std::map<int, Got> Serve(TinyVLAPolicy& policy, const at::Tensor& images,
                         const at::Tensor& proprio) {
  const InferenceServerOptions o = TwoTaskOptions();
  LocalObservationChannel channel(QueueOptions{});
  LocalWeightChannel<Policy> weights;
  weights.Publish(policy.Snapshot(7), 7);
  Replies replies;
  channel.SetReplyHandler(
      [&](absl::Span<const ActionReply> r) { return replies.Record(r); });
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  InferenceServer server(o, &channel, &weights, &metrics, &timeline);
  server.Start([&] { channel.Close(); });
  for (int e = 0; e < kEnvs; ++e) {
    EXPECT_TRUE(channel
                    .Submit({e,
                             e % 2,
                             {images[e][0].data_ptr<uint8_t>(),
                              images[e][1].data_ptr<uint8_t>()},
                             proprio[e].data_ptr<float>(),
                             0})
                    .ok());
  }
  replies.WaitForEveryEnv();
  server.Stop();
  EXPECT_TRUE(server.Wait().ok());
  return replies.got;
}

TEST(InferenceServer, EachEnvGetsThePolicysChoiceForItsOwnObservation) {
  torch::manual_seed(0);
  TinyVLAPolicy policy(
      TinyVLA(TinyVLAOptions().vocab_size(16).chunk(kChunk).max_text_len(6)),
      0);
  const at::Tensor images =
      torch::randint(0, 256, {kEnvs, 2, kSize, kSize, 3}, torch::kByte);
  const at::Tensor proprio = torch::randn({kEnvs, 8});
  std::map<int, Got> got = Serve(policy, images, proprio);
  ASSERT_EQ(static_cast<int>(got.size()), kEnvs);
  torch::NoGradGuard no_grad;
  const InferenceServerOptions o = TwoTaskOptions();
  for (int e = 0; e < kEnvs; ++e) {
    ExpectThePolicysChoice(policy, o, images, proprio, e, got[e]);
  }
}

// Env e's reply as a one-decision segment of which e % 3 + 1 chunk steps
// were executed; the unexecuted steps' tokens and log-probs are scrambled,
// as nothing may read them.
void FillSegment(const at::Tensor& images, const at::Tensor& proprio, int e,
                 const Got& g, RolloutSegment* s) {
  s->Clear();
  for (int c = 0; c < 2; ++c) {
    std::memcpy(s->camera_at(c, 0), images[e][c].data_ptr<uint8_t>(),
                s->camera_bytes);
  }
  std::memcpy(s->proprio_at(0), proprio[e].data_ptr<float>(),
              sizeof(float) * 8);
  std::memcpy(s->tokens_at(0), g.tokens.data(), g.tokens.size());
  std::memcpy(s->log_probs_at(0), g.log_probs.data(), sizeof(float) * kChunk);
  const int executed = e % 3 + 1;
  for (int k = executed; k < kChunk; ++k) {
    for (int d = 0; d < kDims; ++d) s->tokens_at(0)[k * kDims + d] ^= 0x5a;
    s->log_probs_at(0)[k] = -1e3f;
  }
  s->executed[0] = static_cast<uint8_t>(executed);
  s->values[0] = g.value;
  s->rewards[0] = static_cast<float>(e % 2);
  s->terminal[0] = 1;
  s->versions[0] = g.version;
  s->task = e % 2;
  s->n = 1;
}

// inference server -> segment -> learner, on a fresh batch: the learner's
// log-probs of the taken (executed) tokens are the behaviour ones, so the
// IS weight is 1, and so is the ratio of the update's first pass.
TEST(InferenceServer, FreshSamplesReachTheLearnerWithRatioAndWeightOne) {
  for (double temperature : {1.0, 0.4}) {
    for (int epochs : {1, 2}) {
      torch::manual_seed(0);
      auto policy = std::make_shared<TinyVLAPolicy>(
          TinyVLA(
              TinyVLAOptions().vocab_size(16).chunk(kChunk).max_text_len(6)),
          7);
      ASSERT_TRUE(policy->SetActionTemperature(temperature).ok());
      const at::Tensor images =
          torch::randint(0, 256, {kEnvs, 2, kSize, kSize, 3}, torch::kByte);
      const at::Tensor proprio = torch::randn({kEnvs, 8});
      std::map<int, Got> got = Serve(*policy, images, proprio);
      ASSERT_EQ(static_cast<int>(got.size()), kEnvs);
      SegmentShape sh;
      sh.width = sh.height = kSize;
      sh.chunk = kChunk;
      sh.capacity = 1;
      std::vector<std::unique_ptr<RolloutSegment>> segs;
      std::vector<RolloutSegment*> batch;
      for (int e = 0; e < kEnvs; ++e) {
        segs.push_back(std::make_unique<RolloutSegment>(sh));
        FillSegment(images, proprio, e, got[e], segs.back().get());
        batch.push_back(segs.back().get());
      }
      LearnerOptions lo;
      lo.global_units = lo.micro_batch = kEnvs;
      lo.ppo_epochs = epochs;
      lo.minibatches = 1;
      lo.lr = 1e-4;
      const InferenceServerOptions o = TwoTaskOptions();
      LearnerCore learner(policy, o.text, o.text_len, lo, 7);
      learner.Add(batch);
      while (learner.CanTrain()) learner.TrainMicroBatch();
      ASSERT_TRUE(learner.ReadyToStep());
      const LearnerStepStats st = learner.Step();
      const std::string at = "temperature " + std::to_string(temperature) +
                             ", epochs " + std::to_string(epochs);
      // Float32 noise between the server's batched forward and the
      // learner's packed one reaches ~1.5e-5 (a CI run); a wrong temperature
      // or version moves these by far more than 1e-4.
      constexpr double kTol = 1e-4;
      EXPECT_NEAR(st.is_weight_min, 1.0, kTol) << at;
      EXPECT_NEAR(st.is_weight_max, 1.0, kTol) << at;
      if (epochs == 1) {  // one pass: the whole update is the first minibatch
        EXPECT_NEAR(st.ratio_min, 1.0, kTol) << at;
        EXPECT_NEAR(st.ratio_max, 1.0, kTol) << at;
      }
    }
  }
}

}  // namespace
}  // namespace rlvla3
