// File: services/net/grpc_common.h
// -----------------------------------------------------------------------------
// What every role's gRPC edge shares: network options (shared token, message
// size limit, keepalive, deadlines), client channels, the server with
// standard health checking (grpc.health.v1) and reflection, and the one place
// where absl::Status becomes a grpc::Status and back.
//
// The shared token, when set, must come as metadata "authorization: Bearer T"
// on every call of rl-vla3's own services (health and reflection stay open,
// as Kubernetes probes carry no token). It is never logged.
//
// TLS, when NetOptions::tls is set, is mutual: every server presents the
// role's certificate and requires one signed by the CA from its callers;
// every client presents the same pair and checks the server's against the
// CA. Without TLS the token may cross only loopback unless
// allow_plaintext_token says otherwise: servers refuse to listen, and
// clients to connect, off loopback (CheckTokenTransport).
//
// Example:
//   NetOptions net{.token = *ReadToken("", "RLVLA3_TOKEN")};
//   auto server = RoleServer::Start("127.0.0.1:50051", net, {&service});
//   std::shared_ptr<grpc::Channel> ch = MakeChannel("127.0.0.1:50051", net);
//   grpc::ClientContext ctx;  PrepareContext(&ctx, net, absl::Seconds(5));
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_NET_GRPC_COMMON_H_
#define RLVLA3_SERVICES_NET_GRPC_COMMON_H_

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rlvla3 {

// PEM contents (read once, at start), not paths.
struct TlsCredentials {
  std::string cert_chain;   // this role's certificate
  std::string private_key;  // its key
  std::string ca;           // signs every role's certificate
  std::string server_name;  // checked in servers' certificates ("": host)
};

struct NetOptions {
  std::string token;                     // empty: calls are not checked
  std::optional<TlsCredentials> tls;     // nullopt: plaintext
  bool allow_plaintext_token = false;    // the token over plaintext off lo
  int64_t max_message_bytes = 64 << 20;  // both directions
  // What this process's server takes (0: max_message_bytes): a role that
  // receives only small messages refuses a large one before buffering it.
  int64_t server_max_receive_bytes = 0;
  // Calls one connection may hold open on the server (a rollout worker's
  // segment streams parked at a full learner included: the learner parks up
  // to 1024).
  int max_concurrent_streams = 2048;
  absl::Duration keepalive = absl::Seconds(10);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  absl::Duration call_timeout = absl::Seconds(10);  // unary calls, connects
};

// The token from `file` if set (trailing whitespace dropped), else from the
// environment variable `env_var`, else empty. An unreadable or empty file is
// an error naming it (never the token).
absl::StatusOr<std::string> ReadToken(const std::string& file,
                                      const char* env_var);

// FAILED_PRECONDITION when the token would cross `address` (HOST:PORT, a
// listen address or a target) in plaintext off loopback and that is not
// allowed; names cluster.tls_* and cluster.allow_plaintext_token.
absl::Status CheckTokenTransport(const std::string& address,
                                 const NetOptions& net);

// A channel to `target` with keepalive and the message size limit: TLS
// with net.tls, else insecure. Refused as CheckTokenTransport says.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& target, const NetOptions& net);
// Adds the token and, unless infinite, a deadline `timeout` from now.
void PrepareContext(grpc::ClientContext* ctx, const NetOptions& net,
                    absl::Duration timeout);
// Waits until `channel` is connected, at most net.call_timeout.
absl::Status WaitForConnected(grpc::Channel* channel, const std::string& target,
                              const NetOptions& net);

// UNAUTHENTICATED unless the call carries the token (OK when none is set).
grpc::Status CheckToken(const grpc::CallbackServerContext* ctx,
                        const NetOptions& net);

// grpc.health.v1 Check of `target` (the whole server): "SERVING",
// "NOT_SERVING", ..., or the call's error.
absl::StatusOr<std::string> CheckHealth(const std::string& target,
                                        const NetOptions& net);

// A streaming call refused before it starts (e.g. a missing token): the
// reactor only finishes the call with `s`.
template <typename Reactor>
Reactor* RefuseCall(grpc::Status s) {
  class Refused final : public Reactor {
   public:
    explicit Refused(grpc::Status s) { this->Finish(std::move(s)); }
    void OnDone() override { delete this; }
  };
  return new Refused(std::move(s));
}

// A unary call answered at once: checks the token, then `fill()`s the reply.
grpc::ServerUnaryReactor* AnswerNow(grpc::CallbackServerContext* ctx,
                                    const NetOptions& net,
                                    const std::function<void()>& fill);

// A client stream's end: waits (with `lock` on the stream's mutex) until
// `done()`, at most 5 s; then cancels the call and waits for it.
void AwaitStreamEnd(std::unique_lock<std::mutex>& lock,
                    std::condition_variable& cv, grpc::ClientContext& ctx,
                    const std::function<bool()>& done);

grpc::Status ToGrpcStatus(const absl::Status& s);
absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& what);

// A started gRPC server: `services` plus grpc.health.v1 (every service
// SERVING once started) and server reflection.
class RoleServer {
 public:
  static absl::StatusOr<std::unique_ptr<RoleServer>> Start(
      const std::string& listen, const NetOptions& net,
      const std::vector<grpc::Service*>& services);
  ~RoleServer();
  // The bound port (useful with "HOST:0").
  int port() const { return port_; }
  // Health NOT_SERVING, then stops within `grace` (streams are cancelled).
  void Shutdown(absl::Duration grace);

 private:
  RoleServer() = default;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_NET_GRPC_COMMON_H_
