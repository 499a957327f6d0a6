#include "services/options/tls_check.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

std::unique_ptr<BIO, BioFree> Bio(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of a PEM text (a chain's leaf).
X509Ptr ParseCert(const std::string& pem) {
  auto bio = Bio(pem);
  X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return x;
}

std::string Asn1TimeText(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return "?";
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "" when `x` is valid at `now`; else why not.
std::string Validity(X509* x, absl::Time now) {
  std::time_t t = absl::ToTimeT(now);
  if (X509_cmp_time(X509_get0_notAfter(x), &t) < 0) {
    return absl::StrCat("it expired on ", Asn1TimeText(X509_get0_notAfter(x)));
  }
  if (X509_cmp_time(X509_get0_notBefore(x), &t) > 0) {
    return absl::StrCat("it is valid only from ",
                        Asn1TimeText(X509_get0_notBefore(x)));
  }
  return "";
}

}  // namespace

std::optional<TlsProblem> FindTlsProblem(const TlsCredentials& t,
                                         absl::Time now) {
  X509Ptr cert = ParseCert(t.cert_chain);
  if (cert == nullptr) {
    return TlsProblem{"cluster.tls_cert", "a PEM certificate"};
  }
  if (std::string v = Validity(cert.get(), now); !v.empty()) {
    return TlsProblem{"cluster.tls_cert",
                      absl::StrCat("a certificate valid now (", v, ")")};
  }
  auto key_bio = Bio(t.private_key);
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return TlsProblem{"cluster.tls_key", "a PEM private key"};
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return TlsProblem{"cluster.tls_key",
                      "the private key of cluster.tls_cert's certificate "
                      "(this key does not match it)"};
  }
  X509Ptr ca = ParseCert(t.ca);
  if (ca == nullptr) {
    return TlsProblem{"cluster.tls_ca", "a PEM CA certificate"};
  }
  if (std::string v = Validity(ca.get(), now); !v.empty()) {
    return TlsProblem{"cluster.tls_ca",
                      absl::StrCat("a CA certificate valid now (", v, ")")};
  }
  return std::nullopt;
}

}  // namespace rlvla3
