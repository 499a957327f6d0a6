// The inference role with real actor threads and a real TinyVLA: what each
// env gets back is what the policy chose for that env's observation.
#include "services/inference/inference_server.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "policies/tiny_vla_policy.h"
#include "runtime/observation_channel.h"
#include "runtime/weight_channel.h"

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
  in.agentview = images[e][0].unsqueeze(0);
  in.wrist = images[e][1].unsqueeze(0);
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

TEST(InferenceServer, EachEnvGetsThePolicysChoiceForItsOwnObservation) {
  torch::manual_seed(0);
  TinyVLAPolicy policy(
      TinyVLA(TinyVLAOptions().vocab_size(16).chunk(kChunk).max_text_len(6)),
      0);
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
  const at::Tensor images =
      torch::randint(0, 256, {kEnvs, 2, kSize, kSize, 3}, torch::kByte);
  const at::Tensor proprio = torch::randn({kEnvs, 8});
  for (int e = 0; e < kEnvs; ++e) {
    ASSERT_TRUE(channel
                    .Submit({e, e % 2, images[e][0].data_ptr<uint8_t>(),
                             images[e][1].data_ptr<uint8_t>(),
                             proprio[e].data_ptr<float>(), 0})
                    .ok());
  }
  ASSERT_NO_FATAL_FAILURE(replies.WaitForEveryEnv());
  server.Stop();
  ASSERT_TRUE(server.Wait().ok());

  torch::NoGradGuard no_grad;
  for (int e = 0; e < kEnvs; ++e) {
    ExpectThePolicysChoice(policy, o, images, proprio, e, replies.got[e]);
  }
}

}  // namespace
}  // namespace rlvla3
