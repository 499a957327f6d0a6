// Fuzzes what a peer sends a role besides segments: observations and sync
// notices on an inference server's Act stream, and heartbeats to the
// learner's roster, through the real services over an in-process gRPC
// channel (one server for the whole run; an echo actor answers every
// observation it accepts, as inference would).
// Input: a list of messages, each [kind][length: 2 bytes][payload]:
//   kind even: the payload is an Observation (or notice) on the wire;
//   kind odd:  the payload is a HeartbeatRequest.
// Properties: never crashes; every reply to an observation is an action for
// an env the server has or an error with a documented code (INVALID_ARGUMENT,
// FAILED_PRECONDITION, RESOURCE_EXHAUSTED); a heartbeat is OK or
// INVALID_ARGUMENT / RESOURCE_EXHAUSTED; after every input both services
// still answer (GetStatus, ListRoles), and the stream ends OK once every
// accepted observation is answered.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_server.h"
#include "services/net/roster.h"

namespace {

using namespace rlvla3;  // NOLINT: a fuzz harness

constexpr int kEnvs = 4;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "peer_messages_fuzz: property broken: %s\n", what);
    std::abort();
  }
}

WireShape Shape() {
  WireShape s;
  s.height = 4;
  s.width = 3;
  s.proprio_dim = 2;
  s.chunk = 2;
  s.action_dim = 3;
  return s;
}

// One inference service and one roster behind one gRPC server, and an echo
// actor answering every accepted observation with zeros.
struct Services {
  Services()
      : observations(Options(), NetOptions(), &metrics),
        roster(NetOptions(), absl::Seconds(10), /*max_roles=*/8) {
    grpc::ServerBuilder b;
    b.RegisterService(observations.service());
    b.RegisterService(&roster);
    server = b.BuildAndStart();
    channel = server->InProcessChannel(grpc::ChannelArguments());
    inference = v1::Inference::NewStub(channel);
    roles = v1::Roster::NewStub(channel);
    actor = std::thread([this] { Echo(); });
  }
  static ObservationServerOptions Options() {
    ObservationServerOptions o;
    o.shape = Shape();
    o.num_envs = kEnvs;
    o.num_tasks = 2;
    o.request_queue.capacity = 16;
    return o;
  }
  void Echo() {
    const WireShape sh = Shape();
    std::vector<float> actions(size_t(sh.chunk) * sh.action_dim, 0.f);
    std::vector<uint8_t> tokens(actions.size(), 128);
    std::vector<float> log_probs(size_t(sh.chunk), -1.f);
    ObservationRequest r;
    while (observations.requests().Pop(r, absl::InfiniteDuration()) ==
           QueueStatus::kOk) {
      ActionReply a;
      a.env = r.env;
      a.actions = actions.data();
      a.tokens = tokens.data();
      a.log_probs = log_probs.data();
      Require(observations.Reply({&a, 1}).ok(), "a reply is taken");
    }
  }

  MetricsRegistry metrics;
  ObservationServer observations;
  RosterService roster;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Inference::Stub> inference;
  std::unique_ptr<v1::Roster::Stub> roles;
  std::thread actor;  // lives as long as the process
};

Services& Get() {
  static Services* s = new Services();  // the harness's one server
  return *s;
}

bool Documented(int code) {
  return code == 0 || code == grpc::StatusCode::INVALID_ARGUMENT ||
         code == grpc::StatusCode::FAILED_PRECONDITION ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

void Beat(const std::string& payload) {
  v1::HeartbeatRequest beat;
  if (!beat.ParseFromString(payload)) return;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::HeartbeatReply reply;
  const grpc::Status s = Get().roles->Heartbeat(&ctx, beat, &reply);
  Require(s.ok() || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
              s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED,
          "a heartbeat is OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED");
}

void StillServing() {
  grpc::ClientContext a, b;
  a.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  b.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::RoleStatus st;
  v1::RoleRoster roster;
  Require(Get().inference->GetStatus(&a, v1::StatusRequest(), &st).ok(),
          "the inference service answers");
  Require(Get().roles->ListRoles(&b, v1::StatusRequest(), &roster).ok(),
          "the roster answers");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Services& s = Get();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = s.inference->Act(&ctx);
  for (size_t i = 0; i + 3 <= size;) {
    const uint8_t kind = data[i];
    const size_t len =
        std::min<size_t>(size - i - 3, data[i + 1] | data[i + 2] << 8);
    const std::string payload(reinterpret_cast<const char*>(data + i + 3), len);
    i += 3 + len;
    if (kind % 2 == 1) {
      Beat(payload);
      continue;
    }
    v1::Observation m;
    if (m.ParseFromString(payload)) stream->Write(m);
  }
  stream->WritesDone();
  v1::ActionReply reply;
  while (stream->Read(&reply)) {
    Require(Documented(reply.error_code()), "a reply's code is documented");
    Require(reply.error_code() != 0 || reply.version_notice() ||
                reply.env_id() < static_cast<uint32_t>(kEnvs),
            "an action answers an env the server has");
  }
  Require(stream->Finish().ok(), "the stream ends OK once all are answered");
  StillServing();
  return 0;
}
