// File: tests/services/net/inference_fixture.h
// -----------------------------------------------------------------------------
// An inference role's ObservationServer on a real loopback gRPC server, with
// no actors (nothing is inferred): for tests of the wire and its limits.
//
// Example:
//   testutil::InferenceService server(NetOptions());
//   auto stub = v1::Inference::NewStub(
//       MakeChannel(server.address(), NetOptions()).value());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_TESTS_SERVICES_NET_INFERENCE_FIXTURE_H_
#define RLVLA3_TESTS_SERVICES_NET_INFERENCE_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/metrics.h"
#include "services/net/grpc_common.h"
#include "services/net/observation_server.h"

namespace rlvla3::testutil {

constexpr int kFixtureEnvs = 2;

// An inference service (no actors: nothing is inferred) serving on loopback.
struct InferenceService {
  explicit InferenceService(const NetOptions& net,
                            const ObservationServerOptions& o = Options())
      : service(o, net, &metrics) {
    absl::StatusOr<std::unique_ptr<RoleServer>> s =
        RoleServer::Start("127.0.0.1:0", net, {service.service()});
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) server = *std::move(s);
  }
  ~InferenceService() { Stop(); }
  void Stop() {
    if (server == nullptr) return;
    server->Shutdown(absl::Seconds(1));
    server.reset();
    service.Close();
  }
  std::string address() const {
    return absl::StrCat("127.0.0.1:", server->port());
  }
  static ObservationServerOptions Options() {
    ObservationServerOptions o;
    o.num_envs = kFixtureEnvs;
    o.num_tasks = 1;
    o.request_queue.capacity = 8;
    return o;
  }

  MetricsRegistry metrics;
  ObservationServer service;
  std::unique_ptr<RoleServer> server;
};

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_SERVICES_NET_INFERENCE_FIXTURE_H_
