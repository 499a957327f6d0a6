// The rollout worker on real MuJoCo envs (physics only, no rendering) between
// a stand-in inference end (a thread that answers every observation with the
// zero action) and a segment consumer: which task a GRPO group's envs run,
// the task horizon, and where PPO segments end at a time limit.
#include "services/rollout/rollout_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "envs/task.h"
#include "runtime/channels/observation_channel.h"
#include "runtime/channels/segment_channel.h"

namespace rlvla3 {
namespace {

constexpr int kChunk = 2;
constexpr int kHorizon = 6;  // control steps: 3 decisions of 2 steps

// Answers every observation with the zero action, chosen by version 0.
class ZeroActor {
 public:
  explicit ZeroActor(LocalObservationChannel* channel)
      : channel_(channel), thread_([this] { Run(); }) {}
  ~ZeroActor() {
    channel_->Close();
    thread_.join();
  }

 private:
  void Run() {
    const float actions[kChunk * kActionDim] = {};
    const uint8_t tokens[kChunk * kActionDim] = {};
    const float log_probs[kChunk] = {};
    ObservationRequest r[16];
    std::vector<ActionReply> replies;
    for (;;) {
      size_t n = 0;
      if (channel_->requests().PopBulk(r, 16, absl::Milliseconds(50), &n) ==
          QueueStatus::kClosed) {
        return;
      }
      replies.clear();
      for (size_t i = 0; i < n; ++i) {
        replies.push_back({r[i].env, 0, actions, tokens, log_probs, 0.0f});
      }
      // As an inference server's batching does, give the other envs' steps
      // a turn (a reply at once would let two envs hog the env worker).
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (n > 0 && !channel_->Reply(replies).ok()) return;
    }
  }
  LocalObservationChannel* channel_;
  std::thread thread_;
};

// Runs a worker of `num_envs` envs over the two tasks until `count`
// segments arrived; returns copies of them.
std::vector<RolloutSegment> Collect(bool grpo, int num_envs, int count) {
  RolloutWorkerOptions o;
  o.pool.tasks = {*FindTask("lift_the_red_cube"),
                  *FindTask("put_red_cube_on_plate")};
  o.pool.num_envs = num_envs;
  o.pool.num_threads = num_envs;  // one env each: none waits on another
  o.pool.env.render = false;
  o.pool.env.image_width = o.pool.env.image_height = 8;
  o.pool.env.max_episode_steps = kHorizon;
  o.grpo = grpo;
  o.chunk = o.execute_steps = kChunk;
  o.group_size = grpo ? 2 : 1;
  o.quota = 1000;
  o.max_episode_steps = kHorizon;
  SegmentShape shape;
  shape.width = shape.height = 8;
  shape.chunk = kChunk;
  shape.capacity = grpo ? kHorizon / kChunk + 1 : 16;
  LocalObservationChannel observations(QueueOptions{64});
  LocalSegmentChannel segments(shape, 4 * num_envs, QueueOptions{64});
  MetricsRegistry metrics;
  StageTimeline timeline(false);
  std::vector<RolloutSegment> out;
  {
    auto actor = std::make_unique<ZeroActor>(&observations);
    absl::StatusOr<std::unique_ptr<RolloutWorker>> w =
        RolloutWorker::Create(o, &observations, &segments, &metrics, &timeline);
    EXPECT_TRUE(w.ok()) << w.status();
    if (!w.ok()) return out;
    (*w)->Start();
    while (static_cast<int>(out.size()) < count) {
      RolloutSegment* s = nullptr;
      size_t n = 0;
      if (segments.PopBulk(&s, 1, absl::Seconds(30), &n) != QueueStatus::kOk ||
          n == 0) {
        ADD_FAILURE() << "no segment within 30 s";
        break;
      }
      out.push_back(*s);
      segments.Release(s);
    }
    (*w)->Stop();
    actor.reset();  // no reply reaches the worker after this
    segments.Close();
    EXPECT_TRUE((*w)->status().ok()) << (*w)->status();
  }
  return out;
}

TEST(RolloutWorker, GrpoGroupsWithSeveralTasksHoldOneTaskEach) {
  // 8 envs, groups of 2, two tasks: env / 2 picks the group, and the group
  // picks the task (env % 2 would give every group both).
  const std::vector<RolloutSegment> segs = Collect(/*grpo=*/true, 8, 32);
  std::map<uint64_t, std::set<int>> tasks_of_group;
  std::set<int> tasks;
  for (const RolloutSegment& s : segs) {
    tasks_of_group[s.group].insert(s.task);
    tasks.insert(s.task);
  }
  EXPECT_EQ(tasks.size(), 2u) << "both tasks are trained";
  EXPECT_GE(tasks_of_group.size(), 4u);
  for (const auto& [group, t] : tasks_of_group)
    EXPECT_EQ(t.size(), 1u) << "group " << group << " mixes tasks";
}

TEST(RolloutWorker, EpisodesEndAtTheConfiguredHorizon) {
  for (const RolloutSegment& s : Collect(/*grpo=*/true, 4, 8)) {
    EXPECT_TRUE(s.episode_end);
    EXPECT_EQ(s.n, kHorizon / kChunk);  // the zero action never succeeds
  }
}

TEST(RolloutWorker, PpoSegmentsEndAtATimeLimitWithTheFinalObservation) {
  // A time limit is not a terminal state: the segment ends with the episode,
  // its last decision is not terminal, and slot n holds the observation to
  // bootstrap from.
  for (const RolloutSegment& s : Collect(/*grpo=*/false, 2, 6)) {
    ASSERT_EQ(s.n, kHorizon / kChunk);
    EXPECT_TRUE(s.has_bootstrap);
    EXPECT_EQ(s.terminal[s.n - 1], 0);
  }
}

}  // namespace
}  // namespace rlvla3
