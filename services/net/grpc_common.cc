#include "services/net/grpc_common.h"

#include <arpa/inet.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <netinet/in.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace rlvla3 {
namespace {

constexpr char kBearer[] = "Bearer ";

bool SameToken(absl::string_view a, absl::string_view b) {
  // Constant time in the token's length.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^
            static_cast<unsigned char>(i < b.size() ? b[i] : 0);
  }
  return diff == 0;
}

int Ms(absl::Duration d) {
  return static_cast<int>(absl::ToInt64Milliseconds(d));
}

// A host that is a loopback IP literal (127.0.0.0/8, ::1, ::ffff:127.x) or
// exactly "localhost"; a name that merely starts with "127." is not.
bool IsLoopbackHost(absl::string_view host) {
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

// Whether every host a gRPC address or target names is loopback: HOST:PORT,
// [V6]:PORT, dns:[//AUTHORITY/]HOST:PORT, ipv4:/ipv6: address lists (each
// entry), unix: and unix-abstract: sockets.
bool IsLoopbackAddress(absl::string_view a) {
  if (absl::StartsWith(a, "unix:") || absl::StartsWith(a, "unix-abstract:")) {
    return true;
  }
  bool list = false;
  if (absl::ConsumePrefix(&a, "dns:")) {
    if (absl::ConsumePrefix(&a, "//")) {  // an authority, then the name
      const size_t slash = a.find('/');
      if (slash == absl::string_view::npos) return false;
      a.remove_prefix(slash + 1);
    }
  } else if (absl::ConsumePrefix(&a, "ipv4:") ||
             absl::ConsumePrefix(&a, "ipv6:")) {
    list = true;
  }
  std::vector<absl::string_view> entries =
      list ? absl::StrSplit(a, ',') : std::vector<absl::string_view>{a};
  for (absl::string_view e : entries) {
    // HOST:PORT or [V6]:PORT; a bare IPv6 literal has more than one colon.
    absl::string_view host = e;
    if (absl::StartsWith(e, "[")) {
      const size_t close = e.find(']');
      if (close == absl::string_view::npos) return false;
      host = e.substr(0, close + 1);
    } else if (e.find(':') == e.rfind(':') && e.find(':') != e.npos) {
      host = e.substr(0, e.find(':'));
    }
    if (host.empty() || !IsLoopbackHost(host)) return false;
  }
  return !entries.empty();
}

// Mutual TLS with net.tls: callers must present a certificate the CA signed.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(
    const NetOptions& net) {
  if (!net.tls.has_value()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = net.tls->ca;
  ssl.pem_key_cert_pairs.push_back({net.tls->private_key, net.tls->cert_chain});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::string> ReadToken(const std::string& file,
                                      const char* env_var) {
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("token file ", file, ": cannot be read"));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t(absl::StripAsciiWhitespace(ss.str()));
    if (t.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file ", file, ": empty"));
    }
    return t;
  }
  // Read once, at start, by the verb; never written.
  const char* v = env_var != nullptr ? std::getenv(env_var) : nullptr;
  return std::string(v != nullptr ? absl::StripAsciiWhitespace(v) : "");
}

absl::Status CheckTokenTransport(const std::string& address,
                                 const NetOptions& net) {
  if (net.token.empty() || net.tls.has_value() || net.allow_plaintext_token ||
      IsLoopbackAddress(address)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      address,
      ": the shared token would cross the network in plaintext; set "
      "cluster.tls_cert, cluster.tls_key and cluster.tls_ca (TLS), or "
      "cluster.allow_plaintext_token: true on a network you trust"));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& target, const NetOptions& net) {
  if (absl::Status s = CheckTokenTransport(target, net); !s.ok()) return s;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(net.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(net.max_message_bytes));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, Ms(net.keepalive));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Ms(net.keepalive_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Idle streams (a weight subscription between versions) keep pinging, so
  // a learner host that vanishes without closing the connection is noticed.
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  if (!net.tls.has_value()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                     args);
  }
  if (!net.tls->server_name.empty()) {
    args.SetSslTargetNameOverride(net.tls->server_name);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = net.tls->ca;
  ssl.pem_private_key = net.tls->private_key;
  ssl.pem_cert_chain = net.tls->cert_chain;
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

void PrepareContext(grpc::ClientContext* ctx, const NetOptions& net,
                    absl::Duration timeout) {
  if (!net.token.empty()) {
    ctx->AddMetadata("authorization", absl::StrCat(kBearer, net.token));
  }
  if (timeout != absl::InfiniteDuration()) {
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
}

absl::Status WaitForConnected(grpc::Channel* channel, const std::string& target,
                              const NetOptions& net) {
  if (channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + net.call_timeout))) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrCat("cannot connect to ", target, " within ",
                   absl::FormatDuration(net.call_timeout)));
}

grpc::Status CheckToken(const grpc::CallbackServerContext* ctx,
                        const NetOptions& net) {
  if (net.token.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it != md.end()) {
    absl::string_view v(it->second.data(), it->second.size());
    if (absl::StartsWith(v, kBearer) &&
        SameToken(v.substr(sizeof(kBearer) - 1), net.token)) {
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong shared token (metadata "
                      "\"authorization: Bearer TOKEN\")");
}

absl::StatusOr<std::string> CheckHealth(const std::string& target,
                                        const NetOptions& net) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(target, net);
  if (!channel.ok()) return channel.status();
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  grpc::ClientContext ctx;
  PrepareContext(&ctx, net, net.call_timeout);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, absl::StrCat("health of ", target));
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      resp.status());
}

grpc::ServerUnaryReactor* AnswerNow(grpc::CallbackServerContext* ctx,
                                    const NetOptions& net,
                                    const std::function<void()>& fill) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  grpc::Status auth = CheckToken(ctx, net);
  if (auth.ok()) fill();
  r->Finish(auth);
  return r;
}

void AwaitStreamEnd(std::unique_lock<std::mutex>& lock,
                    std::condition_variable& cv, grpc::ClientContext& ctx,
                    const std::function<bool()>& done) {
  if (!cv.wait_for(lock, std::chrono::seconds(5), done)) {
    ctx.TryCancel();  // the server did not finish in time
    cv.wait(lock, done);
  }
}

grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

absl::StatusOr<std::unique_ptr<RoleServer>> RoleServer::Start(
    const std::string& listen, const NetOptions& net,
    const std::vector<grpc::Service*>& services) {
  // Both are process-wide switches of gRPC that only take effect for servers
  // built after them; every rl-vla3 server wants them, so they are set here,
  // idempotently, before each build.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  if (absl::Status s = CheckTokenTransport(listen, net); !s.ok()) return s;
  std::unique_ptr<RoleServer> r(new RoleServer);
  grpc::ServerBuilder b;
  b.AddListeningPort(listen, ServerCredentials(net), &r->port_);
  b.SetMaxReceiveMessageSize(static_cast<int>(net.server_max_receive_bytes > 0
                                                  ? net.server_max_receive_bytes
                                                  : net.max_message_bytes));
  b.SetMaxSendMessageSize(static_cast<int>(net.max_message_bytes));
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                       net.max_concurrent_streams);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Ms(net.keepalive));
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                       Ms(net.keepalive_timeout));
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                       1000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  for (grpc::Service* s : services) b.RegisterService(s);
  r->server_ = b.BuildAndStart();
  if (r->server_ == nullptr || r->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", listen, " (address in use or not local?)"));
  }
  return r;
}

RoleServer::~RoleServer() { Shutdown(absl::Seconds(1)); }

void RoleServer::Shutdown(absl::Duration grace) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  if (grpc::HealthCheckServiceInterface* h = server_->GetHealthCheckService()) {
    h->SetServingStatus(false);
  }
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

}  // namespace rlvla3
