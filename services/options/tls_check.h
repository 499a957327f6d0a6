// File: services/options/tls_check.h
// -----------------------------------------------------------------------------
// TLS files checked when the config is loaded, so that a bad file fails at
// once naming its key, not later as "cannot listen" or a refused handshake:
// the certificate and the CA parse as PEM certificates, the key as a PEM
// private key that matches the certificate, and neither certificate is
// expired or not yet valid.
//
// Example:
//   if (std::optional<TlsProblem> p = FindTlsProblem(creds, absl::Now()))
//     return ConfigError{origin, p->key, path_of(p->key), p->expected}
//         .ToStatus();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_OPTIONS_TLS_CHECK_H_
#define RLVLA3_SERVICES_OPTIONS_TLS_CHECK_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "services/net/grpc_common.h"

namespace rlvla3 {

struct TlsProblem {
  const char* key;       // cluster.tls_cert, cluster.tls_key or cluster.tls_ca
  std::string expected;  // what its file should be (ConfigError::expected)
};

// The first problem of `t`'s PEM files at `now`; nullopt when all is well.
std::optional<TlsProblem> FindTlsProblem(const TlsCredentials& t,
                                         absl::Time now);

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_OPTIONS_TLS_CHECK_H_
