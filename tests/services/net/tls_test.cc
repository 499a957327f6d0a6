// TLS between roles, with certificates made by openssl when the test starts:
// a role certificate signed by the run's CA gets through; a client without a
// certificate, with one from another CA, or in plaintext is refused. And the
// token never crosses the network in plaintext unless allowed.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "runtime/config_schema.h"
#include "runtime/text_file.h"
#include "services/net/grpc_common.h"
#include "services/net/roster.h"
#include "services/options/cluster_options.h"
#include "tests/test_dir.h"

namespace rlvla3 {
namespace {

constexpr char kToken[] = "tls-test-token";

// openssl, quietly; true on success.
bool Shell(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// The run's CA and the roles' certificate, made by the script users run
// (scripts/make_cluster_tls.sh) into `dir`: ca.crt, tls.crt, tls.key.
bool MakePki(const std::string& dir) {
  return Shell(std::string("bash ") + RLVLA3_SOURCE_DIR +
               "/scripts/make_cluster_tls.sh " + dir + " test-job 1");
}

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Shell("openssl version")) GTEST_SKIP() << "no openssl";
    ASSERT_TRUE(MakePki(dir_.File("run")));
    ASSERT_TRUE(MakePki(dir_.File("other")));
    server_net_ = Mutual("run", "run");
    roster_ = std::make_unique<RosterService>(server_net_, absl::Seconds(10));
    absl::StatusOr<std::unique_ptr<RoleServer>> s =
        RoleServer::Start("127.0.0.1:0", server_net_, {roster_.get()});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    target_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  // Options of a role holding PKI/tls.crt and .key, trusting CA/ca.crt.
  NetOptions Mutual(const std::string& pki, const std::string& ca) {
    NetOptions n;
    n.token = kToken;
    n.call_timeout = absl::Seconds(3);
    n.tls = TlsCredentials{Read(dir_.File(pki + "/tls.crt")),
                           Read(dir_.File(pki + "/tls.key")),
                           Read(dir_.File(ca + "/ca.crt")),
                           // A name in every certificate the script makes,
                           // as the manifests set it (tls.server_name).
                           "rl-vla3"};
    return n;
  }

  testutil::TestDir dir_;
  NetOptions server_net_;
  std::unique_ptr<RosterService> roster_;
  std::unique_ptr<RoleServer> server_;
  std::string target_;
};

TEST_F(Tls, ARoleCertificateFromTheRunsCaGetsThrough) {
  absl::StatusOr<v1::RoleRoster> r = ListRoles(target_, Mutual("run", "run"));
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(Tls, AClientWithoutACertificateIsRefused) {
  NetOptions n = Mutual("run", "run");
  n.tls->cert_chain.clear();
  n.tls->private_key.clear();
  absl::StatusOr<v1::RoleRoster> r = ListRoles(target_, n);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(Tls, ACertificateFromAnotherCaIsRefused) {
  // The stranger trusts the run's CA (it could check the server) but its
  // own certificate is signed by another job's CA.
  absl::StatusOr<v1::RoleRoster> r = ListRoles(target_, Mutual("other", "run"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(Tls, APlaintextClientIsRefused) {
  NetOptions n;
  n.token = kToken;  // loopback: the client may send it in plaintext
  n.call_timeout = absl::Seconds(3);
  absl::StatusOr<v1::RoleRoster> r = ListRoles(target_, n);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST_F(Tls, AClientThatDistrustsTheServersCaRefusesIt) {
  absl::StatusOr<v1::RoleRoster> r = ListRoles(target_, Mutual("run", "other"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST(TokenTransport, RefusedInPlaintextOffLoopbackUnlessAllowed) {
  NetOptions n;
  n.token = kToken;
  EXPECT_TRUE(CheckTokenTransport("127.0.0.1:50051", n).ok());
  EXPECT_TRUE(CheckTokenTransport("localhost:50051", n).ok());
  EXPECT_TRUE(CheckTokenTransport("[::1]:50051", n).ok());
  const absl::Status off = CheckTokenTransport("10.1.2.3:50051", n);
  EXPECT_EQ(off.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(off.message().find("cluster.allow_plaintext_token"),
            std::string::npos)
      << off;
  EXPECT_FALSE(CheckTokenTransport("dns:///rlvla3-learner:50051", n).ok());
  // Parsed loopback literals only: a name that starts with "127." is a
  // name, and an address list is loopback only if every entry is.
  for (const char* on :
       {"127.1.2.3:1", "dns:///localhost:1", "ipv4:127.0.0.1:1",
        "ipv4:127.0.0.1:1,127.0.0.2:2", "ipv6:[::1]:1", "[::ffff:127.0.0.1]:1",
        "unix:/tmp/s.sock", "LOCALHOST:1"}) {
    EXPECT_TRUE(CheckTokenTransport(on, n).ok()) << on;
  }
  for (const char* off : {"127.example.org:1", "dns:///127.example.org:1",
                          "ipv4:127.0.0.1:1,10.0.0.5:2", "127.0.0.1.nip.io:1",
                          "localhost.evil.com:1", "dns://8.8.8.8/evil.com:1",
                          "[::2]:1", "ipv6:[::1]:1,[2001:db8::1]:2", ""}) {
    EXPECT_FALSE(CheckTokenTransport(off, n).ok()) << off;
  }
  // Clients and servers both refuse.
  EXPECT_FALSE(MakeChannel("rlvla3-learner:50051", n).ok());
  RosterService roster(n, absl::Seconds(10));
  EXPECT_FALSE(RoleServer::Start("0.0.0.0:0", n, {&roster}).ok());
  // No token: nothing to protect. Allowed: the user's call.
  EXPECT_TRUE(CheckTokenTransport("10.1.2.3:50051", NetOptions()).ok());
  n.allow_plaintext_token = true;
  EXPECT_TRUE(CheckTokenTransport("10.1.2.3:50051", n).ok());
  absl::StatusOr<std::unique_ptr<RoleServer>> open =
      RoleServer::Start("0.0.0.0:0", n, {&roster});
  EXPECT_TRUE(open.ok()) << open.status();
}

// A key that does not match its certificate fails at load naming
// cluster.tls_key (it read as "cannot listen" before); the run's set passes.
// A config of run.yaml with the three TLS files.
Config TlsConfig(const std::string& cert, const std::string& key,
                 const std::string& ca) {
  Config c;
  c.origin = "run.yaml";
  c.cluster.tls_cert = cert;
  c.cluster.tls_key = key;
  c.cluster.tls_ca = ca;
  return c;
}

// `n` failed as a config error whose message holds `text`.
void ExpectConfigError(const absl::StatusOr<NetOptions>& n,
                       const std::string& text) {
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(IsConfigError(n.status()));
  EXPECT_NE(n.status().message().find(text), std::string::npos) << n.status();
}

TEST_F(Tls, AKeyThatDoesNotMatchItsCertificateIsAConfigError) {
  Config c = TlsConfig(dir_.File("run/tls.crt"), dir_.File("run/tls.key"),
                       dir_.File("run/ca.crt"));
  EXPECT_TRUE(NetOptionsFromConfig(c).ok());
  c.cluster.tls_key = dir_.File("other/tls.key");
  absl::StatusOr<NetOptions> n = NetOptionsFromConfig(c);
  ExpectConfigError(n, "run.yaml: cluster.tls_key");
  EXPECT_NE(n.status().message().find("does not match"), std::string::npos)
      << n.status();
  c.cluster.tls_key = dir_.File("run/ca.crt");  // a certificate, not a key
  n = NetOptionsFromConfig(c);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("expected a PEM private key"),
            std::string::npos)
      << n.status();
}

// A self-signed certificate valid from `from` to `to` seconds from now and
// its key, as PEM files at `cert` and `key`.
void WriteCertificate(const std::string& cert, const std::string& key,
                      long from, long to) {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  ASSERT_NE(k, nullptr);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), from);
  X509_gmtime_adj(X509_getm_notAfter(x), to);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("rl-vla3"),
                             -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, k);
  ASSERT_GT(X509_sign(x, k, EVP_sha256()), 0);
  FILE* f = std::fopen(cert.c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen(key.c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(k);
}

// An expired certificate, or one not valid yet, fails at load naming its
// key and the date.
TEST(TlsConfig, AnExpiredOrNotYetValidCertificateIsAConfigError) {
  const testutil::TestDir dir;
  const std::string crt = dir.File("old.crt"), key = dir.File("old.key");
  ASSERT_NO_FATAL_FAILURE(WriteCertificate(crt, key, -7200, -3600));
  const Config c = TlsConfig(crt, key, crt);
  absl::StatusOr<NetOptions> n = NetOptionsFromConfig(c);
  ExpectConfigError(n, "cluster.tls_cert");
  EXPECT_NE(n.status().message().find("it expired on "), std::string::npos)
      << n.status();
  ASSERT_NO_FATAL_FAILURE(WriteCertificate(crt, key, 3600, 7200));
  n = NetOptionsFromConfig(c);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("it is valid only from "),
            std::string::npos)
      << n.status();
  ASSERT_NO_FATAL_FAILURE(WriteCertificate(crt, key, -60, 3600));
  n = NetOptionsFromConfig(c);
  EXPECT_TRUE(n.ok()) << n.status();
}

TEST(TlsConfig, APartialOrUnreadableSetIsAConfigErrorNamingTheKey) {
  const testutil::TestDir dir;
  std::ofstream(dir.File("role.crt")) << "-----BEGIN CERTIFICATE-----\n";
  Config c;
  c.origin = "run.yaml";
  c.cluster.tls_cert = dir.File("role.crt");
  absl::StatusOr<NetOptions> n = NetOptionsFromConfig(c);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(IsConfigError(n.status()));
  EXPECT_NE(n.status().message().find("run.yaml: cluster.tls_key"),
            std::string::npos)
      << n.status();
  c.cluster.tls_key = dir.File("missing.key");
  c.cluster.tls_ca = dir.File("role.crt");
  n = NetOptionsFromConfig(c);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("cluster.tls_key"), std::string::npos)
      << n.status();
}

}  // namespace
}  // namespace rlvla3
