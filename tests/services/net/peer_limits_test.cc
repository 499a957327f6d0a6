// What a peer may hold of a role's server, over real loopback gRPC (issue 49
// item 9): a client that sends bad observations and never reads its replies
// is held back by flow control, the server's reply queue bounded (it grew by
// one reply per message before); a message over a role's receive limit ends
// that call RESOURCE_EXHAUSTED while the server goes on serving; the
// learner's roster keeps at most cluster.max_roster_roles roles, forgetting
// long-silent ones to make room (it kept every address ever heard).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_server.h"
#include "services/net/roster.h"
#include "tests/services/net/inference_fixture.h"

namespace rlvla3 {
namespace {

using testutil::InferenceService;

std::unique_ptr<v1::Inference::Stub> InferenceStub(const std::string& target) {
  return v1::Inference::NewStub(MakeChannel(target, NetOptions()).value());
}

// GetStatus answers: the server still serves.
bool Answers(v1::Inference::Stub* stub) {
  grpc::ClientContext ctx;
  PrepareContext(&ctx, NetOptions(), absl::Seconds(5));
  v1::RoleStatus st;
  return stub->GetStatus(&ctx, v1::StatusRequest(), &st).ok();
}

// A stub whose transport takes in little it is not asked for (as a client
// that does not read its socket): the replies it does not read stay with
// the server.
std::unique_ptr<v1::Inference::Stub> NonReadingStub(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 1024);
  return v1::Inference::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

TEST(PeerLimits, AClientThatNeverReadsItsRepliesIsHeldBackNotBuffered) {
  ObservationServerOptions o = InferenceService::Options();
  o.max_queued_replies = 32;
  InferenceService server(NetOptions(), o);
  auto stub = NonReadingStub(server.address());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  std::unique_ptr<grpc::ClientReaderWriter<v1::Observation, v1::ActionReply>>
      stream = stub->Act(&ctx);
  v1::Observation bad;  // an env the server does not have: an error reply
  bad.set_env_id(1000);
  bad.mutable_proprio()->set_data(std::string(1024, '\0'));  // 20 MB in all
  int written = 0;
  while (written < 200000 && stream->Write(bad)) ++written;
  ctx.TryCancel();
  // Every one of those messages got an error reply queued before: 20,000
  // replies the client never read, held by the server.
  EXPECT_LE(server.service.reply_queue_peak(), o.max_queued_replies + 1)
      << written << " messages written, "
      << server.metrics.counter("invalid_requests").value() << " read";
  EXPECT_LT(written, 20000)
      << server.metrics.counter("invalid_requests").value() << " read";
  EXPECT_TRUE(Answers(stub.get()));
}

TEST(PeerLimits, AMessageOverTheRolesLimitEndsItsCallAndTheServerServesOn) {
  NetOptions net;
  net.server_max_receive_bytes = 256 << 10;
  InferenceService server(net);
  auto stub = InferenceStub(server.address());
  grpc::ClientContext ctx;
  PrepareContext(&ctx, NetOptions(), absl::Seconds(5));
  auto stream = stub->Act(&ctx);
  v1::Observation big;
  big.set_env_id(0);
  big.add_images()->mutable_rgb()->set_data(std::string(1 << 20, '\x7f'));
  stream->Write(big);
  stream->WritesDone();
  v1::ActionReply reply;
  while (stream->Read(&reply)) {
  }
  const grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_TRUE(Answers(stub.get()));
}

grpc::Status Beat(v1::Roster::Stub* stub, const std::string& address) {
  grpc::ClientContext ctx;
  PrepareContext(&ctx, NetOptions(), absl::Seconds(5));
  v1::HeartbeatRequest beat;
  beat.set_address(address);
  v1::HeartbeatReply reply;
  return stub->Heartbeat(&ctx, beat, &reply);
}

TEST(PeerLimits, TheRosterKeepsAtMostItsLimitForgettingLongSilentRoles) {
  RosterService roster(NetOptions(), absl::Milliseconds(50), /*max_roles=*/2);
  absl::StatusOr<std::unique_ptr<RoleServer>> server =
      RoleServer::Start("127.0.0.1:0", NetOptions(), {&roster});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::Roster::NewStub(
      MakeChannel(absl::StrCat("127.0.0.1:", (*server)->port()), NetOptions())
          .value());
  EXPECT_TRUE(Beat(stub.get(), "a:1").ok());
  EXPECT_TRUE(Beat(stub.get(), "b:1").ok());
  EXPECT_TRUE(Beat(stub.get(), "a:1").ok());  // a known role: always
  const grpc::Status full = Beat(stub.get(), "c:1");
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(full.error_message().find("cluster.max_roster_roles"),
            std::string::npos);
  EXPECT_EQ(roster.Snapshot().roles_size(), 2);
  // Silent 10 x the timeout: forgotten to make room.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(Beat(stub.get(), "c:1").ok());
  EXPECT_EQ(roster.Snapshot().roles_size(), 1);
  EXPECT_EQ(Beat(stub.get(), std::string(600, 'x')).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace rlvla3
