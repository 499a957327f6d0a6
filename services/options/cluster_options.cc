#include "services/options/cluster_options.h"

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/config_schema.h"
#include "runtime/text_file.h"
#include "services/options/tls_check.h"

namespace rlvla3 {
namespace {

// cluster.tls_{cert,key,ca}: all three PEM files, or none (nullopt).
absl::StatusOr<std::optional<TlsCredentials>> TlsFromConfig(const Config& c) {
  const ClusterConfig& cl = c.cluster;
  if (cl.tls_cert.empty() && cl.tls_key.empty() && cl.tls_ca.empty()) {
    return std::nullopt;
  }
  TlsCredentials t;
  t.server_name = cl.tls_server_name;
  for (auto [key, path, into] :
       {std::tuple{"cluster.tls_cert", &cl.tls_cert, &t.cert_chain},
        std::tuple{"cluster.tls_key", &cl.tls_key, &t.private_key},
        std::tuple{"cluster.tls_ca", &cl.tls_ca, &t.ca}}) {
    absl::StatusOr<std::string> pem =
        path->empty() ? absl::InvalidArgumentError("not set")
                      : ReadTextFile(*path);
    if (pem.ok() && pem->find("-----BEGIN ") == std::string::npos) {
      pem = absl::InvalidArgumentError("not PEM");
    }
    if (!pem.ok()) {
      return ConfigError{c.OriginOf(key), key, *path,
                         absl::StrCat("a readable PEM file when any "
                                      "cluster.tls_* is set (",
                                      pem.status().message(), ")")}
          .ToStatus();
    }
    *into = *std::move(pem);
  }
  if (std::optional<TlsProblem> p = FindTlsProblem(t, absl::Now())) {
    const std::string& path =
        p->key == std::string("cluster.tls_cert")  ? cl.tls_cert
        : p->key == std::string("cluster.tls_key") ? cl.tls_key
                                                   : cl.tls_ca;
    return ConfigError{c.OriginOf(p->key), p->key, path, p->expected}
        .ToStatus();
  }
  return t;
}

}  // namespace

ClusterLayout LayoutFromConfig(const ClusterConfig& c) {
  ClusterLayout l;
  const int64_t base = c.base_port;
  l.learner = absl::StrCat(c.host, ":", base);
  for (int64_t i = 0; i < c.inference_servers; ++i) {
    l.inference.push_back(absl::StrCat(c.host, ":", base + 1 + i));
  }
  for (int64_t w = 0; w < c.rollout_workers; ++w) {
    l.rollout.push_back(
        absl::StrCat(c.host, ":", base + 1 + c.inference_servers + w));
  }
  const int64_t after = base + c.inference_servers + c.rollout_workers;
  l.learner_ranks.push_back(l.learner);
  for (int64_t r = 1; r < c.learner_ranks; ++r) {
    l.learner_ranks.push_back(absl::StrCat(c.host, ":", after + r));
  }
  l.rendezvous_port = static_cast<int>(after + c.learner_ranks);
  return l;
}

absl::StatusOr<NetOptions> NetOptionsFromConfig(const Config& c) {
  absl::StatusOr<std::string> token =
      ReadToken(c.cluster.token_file, "RLVLA3_TOKEN");
  if (!token.ok()) return token.status();
  NetOptions n;
  n.token = *token;
  absl::StatusOr<std::optional<TlsCredentials>> tls = TlsFromConfig(c);
  if (!tls.ok()) return tls.status();
  n.tls = *std::move(tls);
  n.allow_plaintext_token = c.cluster.allow_plaintext_token;
  return n;
}

absl::Status CheckNetForAddresses(const Config& c,
                                  const std::vector<std::string>& addresses) {
  absl::StatusOr<NetOptions> net = NetOptionsFromConfig(c);
  if (!net.ok()) return net.status();
  for (const std::string& a : addresses) {
    if (absl::Status s = CheckTokenTransport(a, *net); !s.ok()) {
      return ConfigError{c.OriginOf("cluster.allow_plaintext_token"),
                         "cluster.allow_plaintext_token", "false",
                         std::string(s.message())}
          .ToStatus();
    }
  }
  return absl::OkStatus();
}

PrometheusOptions PrometheusOptionsOf(const MetricsConfig& m) {
  PrometheusOptions o;
  o.host = m.prometheus_host;
  o.port = static_cast<int>(m.prometheus_port);
  return o;
}

}  // namespace rlvla3
