// The learner's two ends over gRPC, each on its own, against real gRPC calls
// on loopback: the segment server holds a stream while its pool is full and
// takes it up again as the learner releases segments (nothing lost or
// duplicated), and refuses a segment newer than the learner, counting it, while
// the next call is served; the weight server sends the latest version whole
// to a weights subscriber and its number to a versions-only one, and a
// version over the message limit is never sent.
#include "services/net/learner_service.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "policies/tiny_vla_policy.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/metrics.h"
#include "services/net/weight_client.h"
#include "tests/policies/small_tiny_vla.h"

namespace rlvla3 {
namespace {

SegmentShape Shape() {
  SegmentShape s;
  s.width = 8;
  s.height = 6;
  s.chunk = 3;
  s.capacity = 4;
  return s;
}

// A valid PPO segment of env 1: 2 decisions of behaviour version `version`,
// the last mid-episode with its bootstrap row; `index` tells it apart.
v1::TrajectorySegment Segment(int64_t index, uint64_t version) {
  RolloutSegment a(Shape());
  a.n = 2;
  a.has_bootstrap = true;
  a.index = index;
  for (int t = 0; t < a.n; ++t) {
    a.executed[t] = 1;
    a.versions[t] = version;
  }
  v1::TrajectorySegment m;
  EncodeSegment(a, /*global_env=*/1, &m);
  return m;
}

// A learner service on loopback with `segments` preallocated segments.
struct Learner {
  explicit Learner(int segments, size_t max_parked = 1024)
      : service(Options(segments, max_parked), net, &weights, &metrics) {
    auto s = RoleServer::Start("127.0.0.1:0", net, {service.service()});
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) server = *std::move(s);
    stub = v1::Learner::NewStub(
        grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  }
  ~Learner() {
    server->Shutdown(absl::Seconds(1));
    service.Close();
  }
  static LearnerServiceOptions Options(int segments, size_t max_parked) {
    LearnerServiceOptions o;
    o.segments.shape = Shape();
    o.segments.segment_count = segments;
    o.segments.max_parked_streams = max_parked;
    o.segments.limits.num_envs = 4;
    o.segments.limits.num_tasks = 1;
    return o;
  }
  std::string address() const {
    return absl::StrCat("127.0.0.1:", server->port());
  }
  // Pushes `messages` on one call; its status and the accepted count.
  grpc::Status Push(const std::vector<v1::TrajectorySegment>& messages,
                    uint32_t* accepted) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::PushSegmentsReply reply;
    auto writer = stub->PushSegments(&ctx, &reply);
    for (const auto& m : messages) {
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    grpc::Status st = writer->Finish();
    *accepted = reply.accepted();
    return st;
  }
  // Up to `max` segments from the intake within 10 s.
  std::vector<RolloutSegment*> Pop(size_t max) {
    std::vector<RolloutSegment*> out(max);
    size_t n = 0;
    service.segments().PopBulk(out.data(), max, absl::Seconds(10), &n);
    out.resize(n);
    return out;
  }

  NetOptions net;
  MetricsRegistry metrics;
  LocalWeightChannel<Policy> weights;
  LearnerService service;
  std::unique_ptr<RoleServer> server;
  std::unique_ptr<v1::Learner::Stub> stub;
};

TEST(SegmentServer, AFullPoolHoldsTheStreamUntilTheLearnerReleasesSegments) {
  Learner learner(/*segments=*/2);
  SegmentServer& intake = learner.service.segments();
  std::vector<v1::TrajectorySegment> messages;
  for (int i = 0; i < 5; ++i) messages.push_back(Segment(i, 0));
  std::atomic<bool> finished{false};
  uint32_t accepted = 0;
  grpc::Status status;
  std::thread pusher([&] {
    status = learner.Push(messages, &accepted);
    finished = true;
  });
  Counter& received = learner.metrics.counter("segments_received");
  for (int i = 0; i < 200 && intake.depth() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The pool is full: the stream waits, nothing more is decoded.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(intake.depth(), 2u);
  EXPECT_EQ(received.value(), 2u);
  EXPECT_FALSE(finished.load());
  std::vector<int64_t> order;
  for (int round = 0; order.size() < messages.size() && round < 10; ++round) {
    for (RolloutSegment* s : learner.Pop(2)) {
      order.push_back(s->index);
      intake.Release(s);
    }
  }
  pusher.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(accepted, 5u);
  // Every segment once: the reactor's reads may complete on different gRPC
  // threads, and the queue keeps each thread's order only.
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(SegmentServer, ASegmentNewerThanTheLearnerIsRefusedAndTheNextCallServed) {
  Learner learner(/*segments=*/4);
  learner.service.SetVersionSource([] { return uint64_t{5}; });
  uint32_t accepted = 0;
  grpc::Status st = learner.Push({Segment(0, 5), Segment(1, 6)}, &accepted);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("version"), std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("1 accepted before it"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(learner.service.segments().rejected(), 1u);
  st = learner.Push({Segment(2, 4)}, &accepted);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(accepted, 1u);
  std::vector<RolloutSegment*> got = learner.Pop(4);
  // The queue keeps each producing thread's order only.
  std::vector<int64_t> indices;
  for (RolloutSegment* s : got) {
    indices.push_back(s->index);
    learner.service.segments().Release(s);
  }
  std::sort(indices.begin(), indices.end());
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 2}));
}

// Runs `f` on a thread with a `bytes` stack and waits for it.
void RunOnSmallStack(size_t bytes, std::function<void()> f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t t;
  auto run = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&t, &attr, run, &f), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

// Waits until `n` streams are parked (10 s at most).
void WaitParked(const SegmentServer& intake, size_t n) {
  for (int i = 0; i < 1000 && intake.parked_streams() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(intake.parked_streams(), n);
}

// A peer's chain of parked streams whose messages are all refused: the one
// segment released walks it in a loop, on a thread with a small stack (a
// recursion through every refused stream overflowed it), and comes back to
// the pool; every stream is told why.
TEST(SegmentServer, AChainOfParkedRefusedStreamsIsWalkedInALoop) {
  Learner learner(/*segments=*/1);
  learner.service.SetVersionSource([] { return uint64_t{5}; });
  SegmentServer& intake = learner.service.segments();
  uint32_t accepted = 0;
  ASSERT_TRUE(learner.Push({Segment(0, 1)}, &accepted).ok());  // the pool
  constexpr int kStreams = 1000;
  std::atomic<int> refused{0};
  std::vector<std::thread> pushers;
  for (int i = 0; i < kStreams; ++i) {
    pushers.emplace_back([&learner, &refused, i] {
      uint32_t a = 0;
      const grpc::Status st = learner.Push({Segment(100 + i, 9)}, &a);
      if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) ++refused;
    });
  }
  WaitParked(intake, kStreams);
  std::vector<RolloutSegment*> held = learner.Pop(1);
  ASSERT_EQ(held.size(), 1u);
  RunOnSmallStack(192 << 10, [&] { intake.Release(held[0]); });
  for (std::thread& t : pushers) t.join();
  EXPECT_EQ(refused.load(), kStreams);
  EXPECT_EQ(intake.rejected(), static_cast<uint64_t>(kStreams));
  EXPECT_EQ(intake.parked_streams(), 0u);
  ASSERT_TRUE(learner.Push({Segment(1, 4)}, &accepted).ok());  // pool whole
  EXPECT_EQ(accepted, 1u);
}

// Streams waiting for a segment are bounded: one past the limit is refused
// at once (RESOURCE_EXHAUSTED), the waiting ones are served later.
TEST(SegmentServer, StreamsPastTheParkedLimitAreRefusedNotHeld) {
  Learner learner(/*segments=*/1, /*max_parked=*/2);
  SegmentServer& intake = learner.service.segments();
  uint32_t accepted = 0;
  ASSERT_TRUE(learner.Push({Segment(0, 0)}, &accepted).ok());  // the pool
  std::vector<grpc::Status> st(2);
  std::vector<std::thread> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.emplace_back([&learner, &st, i] {
      uint32_t a = 0;
      st[i] = learner.Push({Segment(1 + i, 0)}, &a);
    });
  }
  WaitParked(intake, 2);
  const grpc::Status third = learner.Push({Segment(9, 0)}, &accepted);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << third.error_message();
  for (int round = 0; round < 3; ++round) {
    for (RolloutSegment* s : learner.Pop(1)) intake.Release(s);
  }
  for (std::thread& t : waiting) t.join();
  EXPECT_TRUE(st[0].ok()) << st[0].error_message();
  EXPECT_TRUE(st[1].ok()) << st[1].error_message();
}

std::shared_ptr<TinyVLAPolicy> SmallPolicy(uint64_t version) {
  torch::manual_seed(3);
  return std::make_shared<TinyVLAPolicy>(TinyVLA(testutil::SmallTinyVLA()),
                                         version);
}

TEST(WeightServer, SendsTheLatestVersionWholeOrAsItsNumber) {
  Learner learner(/*segments=*/1);
  learner.weights.Publish(SmallPolicy(3), 3);
  std::mutex mu;
  std::condition_variable cv;
  uint64_t whole = 0, number = 0;
  size_t tensors = 0;
  WeightSubscriber::Callbacks full;
  full.on_weights = [&](AssembledWeights w) {
    std::lock_guard<std::mutex> lock(mu);
    whole = w.version;
    tensors = w.state.size();
    cv.notify_all();
    return absl::OkStatus();
  };
  WeightClientOptions o;
  o.target = learner.address();
  o.policy_kind = "tiny_vla";
  auto sub = WeightSubscriber::Start(o, learner.net, std::move(full));
  ASSERT_TRUE(sub.ok()) << sub.status();
  WeightSubscriber::Callbacks versions;
  versions.on_version = [&](uint64_t v) {
    std::lock_guard<std::mutex> lock(mu);
    number = v;
    cv.notify_all();
  };
  o.versions_only = true;
  auto counter = WeightSubscriber::Start(o, learner.net, std::move(versions));
  ASSERT_TRUE(counter.ok()) << counter.status();
  auto heard = [&](uint64_t v) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10),
                       [&] { return whole == v && number == v; });
  };
  EXPECT_TRUE(heard(3)) << whole << " " << number;
  learner.weights.Publish(SmallPolicy(4), 4);
  EXPECT_TRUE(heard(4)) << whole << " " << number;
  EXPECT_EQ(tensors, SmallPolicy(4)->State().size());
  (*sub)->Stop();
  (*counter)->Stop();
}

TEST(WeightServer, AVersionOverTheMessageLimitIsNeverSent) {
  LocalWeightChannel<Policy> weights;
  WeightServerOptions small;
  small.max_message_bytes = 1024;  // the small policy's chunk is larger
  WeightServer refused(small, &weights);
  WeightServer sent(WeightServerOptions{}, &weights);
  weights.Publish(SmallPolicy(2), 2);
  for (int i = 0; i < 100 && sent.encoded_version() != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(sent.encoded_version(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(refused.encoded_version(), 0u);
}

}  // namespace
}  // namespace rlvla3
