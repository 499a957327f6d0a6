// The rollout worker's gRPC observation channel against real inference
// services on loopback: with several inference servers its envs resume on
// the oldest version the live servers serve (an env sent to a server that
// lags would otherwise act on weights staler than the admission gate
// allowed), and a lost server that lagged holds them back no longer.
#include "services/net/observation_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_server.h"
#include "tests/services/net/inference_fixture.h"

namespace rlvla3 {
namespace {

using testutil::InferenceService;
constexpr int kEnvs = testutil::kFixtureEnvs;

// The versions the channel's handler heard, in order.
class Heard {
 public:
  void Add(uint64_t v) {
    std::lock_guard<std::mutex> lock(mu_);
    versions_.push_back(v);
    cv_.notify_all();
  }
  // The last version heard once it is `v` (or what it is after 10 s).
  uint64_t WaitFor(uint64_t v) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10),
                 [&] { return !versions_.empty() && versions_.back() >= v; });
    return versions_.empty() ? 0 : versions_.back();
  }
  uint64_t Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return versions_.empty() ? 0 : versions_.back();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint64_t> versions_;
};

TEST(ObservationChannel, EnvsResumeOnTheOldestVersionTheirServersServe) {
  const NetOptions net;
  InferenceService a(net), b(net);
  a.service.AnnounceVersion(3);
  b.service.AnnounceVersion(3);
  ObservationClientOptions o;
  o.targets = {a.address(), b.address()};
  o.num_envs = kEnvs;
  o.give_up_after = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<GrpcObservationChannel>> ch =
      GrpcObservationChannel::Create(o, net);
  ASSERT_TRUE(ch.ok()) << ch.status();
  Heard heard;
  (*ch)->SetVersionHandler([&heard](uint64_t v) { heard.Add(v); });
  (*ch)->SetReplyHandler(
      [](absl::Span<const ActionReply>) { return absl::OkStatus(); });
  ASSERT_EQ(heard.WaitFor(3), 3u);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((*ch)->stats().servers_up < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ((*ch)->stats().servers_up, 2);

  // a moving on changes nothing while b still serves 3.
  a.service.AnnounceVersion(5);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(heard.Last(), 3u);
  // b passes a: the oldest served is a's 5; then a passes b: b's 7.
  b.service.AnnounceVersion(7);
  EXPECT_EQ(heard.WaitFor(5), 5u);
  a.service.AnnounceVersion(9);
  EXPECT_EQ(heard.WaitFor(7), 7u);
  // b, now behind, is lost: the envs go on with a's version.
  b.Stop();
  EXPECT_EQ(heard.WaitFor(9), 9u);
  (*ch)->Close();
}

}  // namespace
}  // namespace rlvla3
