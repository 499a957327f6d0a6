// The roster's heartbeat replies carry the learner's side of admission: a
// number naming the learner process and how many times it was starved
// (Learner::starved). A rollout worker's HeartbeatSender hears both on every
// reply, over real loopback gRPC; a second learner process is another
// incarnation.
#include "services/net/roster.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

struct Heard {
  std::mutex mu;
  uint64_t incarnation = 0, starved = 0;
  int replies = 0;
};

// Sends heartbeats to `learner` until `until` holds (at most 10 s).
void BeatUntil(const std::string& learner, Heard* heard,
               const std::function<bool()>& until) {
  HeartbeatOptions o{learner, "127.0.0.1:1", absl::Milliseconds(20),
                     [heard](uint64_t incarnation, uint64_t starved) {
                       std::lock_guard<std::mutex> lock(heard->mu);
                       heard->incarnation = incarnation;
                       heard->starved = starved;
                       ++heard->replies;
                     }};
  auto sender = HeartbeatSender::Start(
      o, NetOptions(), [](v1::RoleStatus* st) { st->set_role("rollout"); });
  ASSERT_TRUE(sender.ok()) << sender.status();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!until() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(Roster, HeartbeatRepliesSayHowOftenThisLearnerWasStarved) {
  std::atomic<uint64_t> starved{0};
  Heard heard;
  uint64_t first_incarnation = 0;
  {
    RosterService roster(NetOptions(), absl::Seconds(10));
    roster.SetStarvedSource([&] { return starved.load(); });
    auto server = RoleServer::Start("127.0.0.1:0", NetOptions(), {&roster});
    ASSERT_TRUE(server.ok()) << server.status();
    const std::string learner = absl::StrCat("127.0.0.1:", (*server)->port());
    BeatUntil(learner, &heard, [&] {
      std::lock_guard<std::mutex> lock(heard.mu);
      return heard.replies > 0;
    });
    std::lock_guard<std::mutex> lock(heard.mu);
    EXPECT_NE(heard.incarnation, 0u);
    EXPECT_EQ(heard.starved, 0u);
    first_incarnation = heard.incarnation;
    starved.store(3);
  }
  // A second learner process (a restart): another incarnation, its count.
  RosterService roster(NetOptions(), absl::Seconds(10));
  roster.SetStarvedSource([&] { return starved.load(); });
  auto server = RoleServer::Start("127.0.0.1:0", NetOptions(), {&roster});
  ASSERT_TRUE(server.ok()) << server.status();
  BeatUntil(absl::StrCat("127.0.0.1:", (*server)->port()), &heard, [&] {
    std::lock_guard<std::mutex> lock(heard.mu);
    return heard.starved == 3;
  });
  std::lock_guard<std::mutex> lock(heard.mu);
  EXPECT_EQ(heard.starved, 3u);
  EXPECT_NE(heard.incarnation, first_incarnation);
}

}  // namespace
}  // namespace rlvla3
