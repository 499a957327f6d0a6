#include "services/kube/cluster_spec.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/config.h"
#include "runtime/config_schema.h"
#include "runtime/device_name.h"
#include "runtime/render_choices.h"

namespace rlvla3::kube {
namespace {

// <name>-inference must stay a valid Service name and <name>-rollout-<hash>
// a valid label value (63 characters): 40 leaves room for every suffix.
constexpr size_t kMaxNameLength = 40;
constexpr int64_t kMaxGpus = 16;

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?; RFC 1035 also starts with a
// letter.
bool IsDnsLabel(const std::string& s, size_t max_length, bool rfc1035) {
  if (s.empty() || s.size() > max_length) return false;
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  if (rfc1035 && !(s.front() >= 'a' && s.front() <= 'z')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// A Kubernetes quantity as people write them: 4, 0.5, 500m, 16Gi, 20G.
bool IsQuantity(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (absl::ascii_isdigit(s[i]) || s[i] == '.')) ++i;
  if (i == 0 || std::count(s.begin(), s.begin() + i, '.') > 1) return false;
  const std::string suffix = s.substr(i);
  static const char* const kSuffixes[] = {"",   "m",  "k",  "M",  "G",
                                          "T",  "P",  "E",  "Ki", "Mi",
                                          "Gi", "Ti", "Pi", "Ei"};
  return std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) !=
         std::end(kSuffixes);
}

bool IsImage(const std::string& s) {
  return !s.empty() && std::none_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isspace(c) || absl::ascii_iscntrl(c);
  });
}

bool IsReadableFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) &&
         access(path.c_str(), R_OK) == 0;
}

// Walks CLUSTER.yaml's mappings. The first error wins; later calls are no-ops.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}
  const absl::Status& status() const { return status_; }

  void Fail(const std::string& key, const std::string& value,
            const std::string& expected) {
    if (status_.ok())
      status_ = ConfigError{file_, key, value, expected}.ToStatus();
  }

  // True if `node` (at key path `prefix`) is a mapping with `known` keys only.
  bool Map(const YAML::Node& node, const std::string& prefix,
           const std::vector<std::string>& known) {
    if (!status_.ok()) return false;
    if (!node.IsMap()) {
      Fail(prefix, "",
           absl::StrCat("a mapping with keys ", absl::StrJoin(known, ", ")));
      return false;
    }
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        Fail(Join(prefix, key), "",
             absl::StrCat("a known key", prefix.empty() ? "" : " under ",
                          prefix, " (", absl::StrJoin(known, ", "), ")"));
        return false;
      }
    }
    return true;
  }

  void Int(const YAML::Node& map, const std::string& prefix, const char* key,
           int64_t lo, int64_t hi, int64_t* out) {
    const YAML::Node v = map[key];
    if (!status_.ok() || !v.IsDefined()) return;
    int64_t x = 0;
    if (!v.IsScalar() || !absl::SimpleAtoi(v.Scalar(), &x) || x < lo ||
        x > hi) {
      Fail(Join(prefix, key), Text(v),
           absl::StrCat("an integer from ", lo, " to ", hi));
      return;
    }
    *out = x;
  }

  // A string accepted by `valid`; `required` ones must be present.
  void Str(const YAML::Node& map, const std::string& prefix, const char* key,
           bool required, bool (*valid)(const std::string&),
           const std::string& expected, std::string* out) {
    const YAML::Node v = map[key];
    if (!status_.ok()) return;
    if (!v.IsDefined()) {
      if (required) Fail(Join(prefix, key), "", "a value (required)");
      return;
    }
    if (!v.IsScalar() || !valid(v.Scalar())) {
      Fail(Join(prefix, key), Text(v), expected);
      return;
    }
    *out = v.Scalar();
  }

  void Bool(const YAML::Node& map, const std::string& prefix, const char* key,
            bool* out) {
    const YAML::Node v = map[key];
    if (!status_.ok() || !v.IsDefined()) return;
    if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
      Fail(Join(prefix, key), Text(v), "true or false");
      return;
    }
    *out = v.Scalar() == "true";
  }

  // A list of run-config overrides, each "key=value" (checked against the
  // run config's schema by CheckRunConfig).
  void Overrides(const YAML::Node& map, const std::string& prefix,
                 std::vector<std::string>* out) {
    const YAML::Node v = map["set"];
    if (!status_.ok() || !v.IsDefined()) return;
    const std::string expected = "a list of run-config overrides key=value";
    if (!v.IsSequence()) {
      Fail(Join(prefix, "set"), Text(v), expected);
      return;
    }
    for (const YAML::Node& item : v) {
      if (!item.IsScalar() || item.Scalar().find('=') == std::string::npos) {
        Fail(Join(prefix, "set"), Text(item), expected);
        return;
      }
      out->push_back(item.Scalar());
    }
  }

 private:
  static std::string Join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : absl::StrCat(prefix, ".", key);
  }
  static std::string Text(const YAML::Node& v) {
    if (v.IsScalar()) return v.Scalar();
    return v.IsNull() ? "null" : v.IsMap() ? "a mapping" : "a list";
  }

  std::string file_;
  absl::Status status_;
};

bool AnyString(const std::string& s) { return !s.empty(); }
bool NameOk(const std::string& s) {
  return IsDnsLabel(s, kMaxNameLength, true);
}
bool NamespaceOk(const std::string& s) { return IsDnsLabel(s, 63, false); }
bool AccessModeOk(const std::string& s) {
  return s == "ReadWriteOnce" || s == "ReadWriteMany";
}

void ParseRole(Parser& p, const YAML::Node& root, const std::string& role,
               int64_t max_replicas, RoleSpec* r) {
  const YAML::Node node = root[role];
  if (!node.IsDefined()) return;
  if (!p.Map(node, role, {"replicas", "gpus", "cpu", "memory", "set"})) return;
  p.Int(node, role, "replicas", 1, max_replicas, &r->replicas);
  p.Int(node, role, "gpus", 0, kMaxGpus, &r->gpus);
  const std::string quantity = "a Kubernetes quantity (e.g. 4, 500m, 16Gi)";
  p.Str(node, role, "cpu", false, IsQuantity, quantity, &r->cpu);
  p.Str(node, role, "memory", false, IsQuantity, quantity, &r->memory);
  p.Overrides(node, role, &r->overrides);
}

void ParseStorage(Parser& p, const YAML::Node& root, StorageSpec* s) {
  const YAML::Node node = root["storage"];
  if (!node.IsDefined()) return;
  if (!p.Map(node, "storage", {"class", "size", "access_mode"})) return;
  p.Str(node, "storage", "class", false, AnyString, "a storage class name",
        &s->storage_class);
  p.Str(node, "storage", "size", false, IsQuantity,
        "a Kubernetes quantity (e.g. 20Gi)", &s->size);
  p.Str(node, "storage", "access_mode", false, AccessModeOk,
        "ReadWriteOnce or ReadWriteMany", &s->access_mode);
}

// A label's name part, or a value: 63 characters, alphanumerics with '-', '_'
// and '.' inside (a value may be empty).
bool IsLabelPart(const std::string& s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  if (s.size() > 63) return false;
  const auto alnum = [](char c) { return absl::ascii_isalnum(c); };
  return alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) {
           return alnum(c) || c == '-' || c == '_' || c == '.';
         });
}

// A label key: [DNS-1123 subdomain prefix '/'] name.
bool IsLabelKey(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return IsLabelPart(s, false);
  const std::string prefix = s.substr(0, slash);
  if (prefix.empty() || prefix.size() > 253) return false;
  for (const absl::string_view part : absl::StrSplit(prefix, '.')) {
    if (!IsDnsLabel(std::string(part), 63, false)) return false;
  }
  return IsLabelPart(s.substr(slash + 1), false);
}

void ParseScraper(Parser& p, const YAML::Node& root, ScraperSpec* s) {
  const YAML::Node node = root["scraper"];
  if (!node.IsDefined()) return;
  if (!p.Map(node, "scraper", {"namespace", "pod_labels"})) return;
  p.Str(node, "scraper", "namespace", false, NamespaceOk,
        "the namespace the metrics scraper runs in (a DNS-1123 label)", &s->ns);
  const YAML::Node labels = node["pod_labels"];
  if (!labels.IsDefined() || !p.status().ok()) return;
  const std::string expected =
      "a mapping of at most 8 pod labels, key: value (Kubernetes label "
      "syntax)";
  if (!labels.IsMap() || labels.size() > 8) {
    p.Fail("scraper.pod_labels", "", expected);
    return;
  }
  for (const auto& kv : labels) {
    const std::string key = kv.first.Scalar();
    if (!kv.second.IsScalar() || !IsLabelKey(key) ||
        !IsLabelPart(kv.second.Scalar(), true)) {
      p.Fail(absl::StrCat("scraper.pod_labels.", key),
             kv.second.IsScalar() ? kv.second.Scalar() : "", expected);
      return;
    }
    s->pod_labels.emplace_back(key, kv.second.Scalar());
  }
}

void ParseTls(Parser& p, const YAML::Node& root, TlsSpec* t) {
  const YAML::Node node = root["tls"];
  if (!node.IsDefined()) return;
  if (!p.Map(node, "tls", {"cert", "key", "ca", "server_name"})) return;
  p.Str(node, "tls", "cert", true, AnyString, "the roles' PEM certificate",
        &t->cert);
  p.Str(node, "tls", "key", true, AnyString, "its PEM private key", &t->key);
  p.Str(node, "tls", "ca", true, AnyString, "the PEM CA that signed it",
        &t->ca);
  p.Str(node, "tls", "server_name", false, AnyString,
        "the name the roles check in each other's certificate",
        &t->server_name);
}

void ParsePorts(Parser& p, const YAML::Node& root, ClusterSpec* c) {
  const YAML::Node node = root["ports"];
  if (!node.IsDefined()) return;
  if (!p.Map(node, "ports",
             {"learner", "inference", "rollout", "rendezvous", "metrics"}))
    return;
  p.Int(node, "ports", "metrics", 0, 65535, &c->metrics_port);
  p.Int(node, "ports", "learner", 1, 65535, &c->learner.port);
  p.Int(node, "ports", "inference", 1, 65535, &c->inference.port);
  p.Int(node, "ports", "rollout", 1, 65535, &c->rollout.port);
  p.Int(node, "ports", "rendezvous", 1, 65535, &c->rendezvous_port);
  if (c->learner.port == c->rendezvous_port) {
    p.Fail("ports.rendezvous", absl::StrCat(c->rendezvous_port),
           "a port other than ports.learner (both are the learner's)");
  }
}

// `written` resolved against CLUSTER.yaml's folder; must be a readable file.
void ResolveFile(Parser& p, const ClusterSpec& c, const char* key,
                 const std::string& written, bool check,
                 std::string* resolved) {
  if (written.empty()) return;
  std::filesystem::path f(written);
  if (f.is_relative()) f = std::filesystem::path(c.path).parent_path() / f;
  *resolved = f.lexically_normal().string();
  if (check && !IsReadableFile(*resolved)) {
    p.Fail(key, written,
           absl::StrCat("a readable file (relative to the CLUSTER.yaml's "
                        "folder; resolved to ",
                        *resolved, ")"));
  }
}

absl::StatusOr<std::string> ReadText(const std::string& path,
                                     const std::string& what) {
  std::ifstream in(path);
  if (!in) {
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot read the ", what));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A role whose run-config key puts it on a GPU (learner.device,
// inference.device cuda or cuda:N; env.render_backend gpu) asks for one: else
// its pods would start only to fail on "no CUDA device".
absl::Status CheckPodsHaveTheirGpus(const ClusterSpec& spec,
                                    const Config& learner, const Config& infer,
                                    const Config& rollout) {
  const bool learner_cuda = ParseDeviceName(learner.learner.device)->cuda;
  const bool inference_cuda = ParseDeviceName(infer.inference.device)->cuda;
  const struct {
    bool needs;
    int64_t gpus;
    const char* key;
    const char* run_key;
    const std::string& value;
  } roles[] = {
      {learner_cuda, spec.learner.gpus, "learner.gpus", "learner.device",
       learner.learner.device},
      {inference_cuda, spec.inference.gpus, "inference.gpus",
       "inference.device", infer.inference.device},
      {kRenderBackendNames.Parse(rollout.env.render_backend) ==
           RenderBackend::kGpu,
       spec.rollout.gpus, "rollout.gpus", "env.render_backend",
       rollout.env.render_backend},
  };
  for (const auto& r : roles) {
    if (!r.needs || r.gpus > 0) continue;
    return ConfigError{
        spec.path, r.key, absl::StrCat(r.gpus),
        absl::StrCat("at least 1: the run config (", spec.config,
                     " with the overrides) has ", r.run_key, ": ", r.value)}
        .ToStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterSpec> ParseClusterSpec(const std::string& text,
                                             const std::string& path,
                                             bool check_files) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ConfigError{absl::StrCat(path, ":", e.mark.line + 1), "", "",
                       absl::StrCat("valid YAML (", e.msg, ")")}
        .ToStatus();
  }
  ClusterSpec c;
  c.path = path;
  Parser p(path);
  if (!p.Map(root, "",
             {"name", "namespace", "image", "config", "token_file", "tls",
              "allow_plaintext_token", "set", "learner", "inference", "rollout",
              "storage", "ports", "scraper"})) {
    return p.status();
  }
  p.Str(root, "", "name", true, NameOk,
        absl::StrCat("a DNS-1035 label of at most ", kMaxNameLength,
                     " characters (lower-case letters, digits and '-', "
                     "starting with a letter)"),
        &c.name);
  p.Str(root, "", "namespace", false, NamespaceOk,
        "a DNS-1123 label (lower-case letters, digits and '-')", &c.ns);
  p.Str(root, "", "image", true, IsImage, "a container image reference",
        &c.image);
  p.Str(root, "", "config", true, AnyString, "the run config's path",
        &c.config);
  p.Str(root, "", "token_file", false, AnyString, "the token file's path",
        &c.token_file);
  ParseTls(p, root, &c.tls);
  p.Bool(root, "", "allow_plaintext_token", &c.allow_plaintext_token);
  p.Overrides(root, "", &c.overrides);
  ParseRole(p, root, "learner", 64, &c.learner);
  ParseRole(p, root, "inference", 64, &c.inference);
  ParseRole(p, root, "rollout", 256, &c.rollout);
  ParseStorage(p, root, &c.storage);
  ParsePorts(p, root, &c);
  ParseScraper(p, root, &c.scraper);
  ResolveFile(p, c, "config", c.config, check_files, &c.config_path);
  ResolveFile(p, c, "token_file", c.token_file, check_files, &c.token_path);
  ResolveFile(p, c, "tls.cert", c.tls.cert, check_files, &c.tls.cert_path);
  ResolveFile(p, c, "tls.key", c.tls.key, check_files, &c.tls.key_path);
  ResolveFile(p, c, "tls.ca", c.tls.ca, check_files, &c.tls.ca_path);
  if (!c.token_file.empty() && c.tls.cert.empty() && !c.allow_plaintext_token) {
    p.Fail("token_file", c.token_file,
           "a token with tls: {cert, key, ca} (the pods talk across the "
           "cluster network), or allow_plaintext_token: true");
  }
  if (!p.status().ok()) return p.status();
  if (c.storage.access_mode.empty()) {
    c.storage.access_mode =
        c.learner.replicas > 1 ? "ReadWriteMany" : "ReadWriteOnce";
  }
  return c;
}

absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path,
                                            bool check_files) {
  if (!IsReadableFile(path)) {
    return ConfigError{path, "", "", "a readable CLUSTER.yaml"}.ToStatus();
  }
  absl::StatusOr<std::string> text = ReadText(path, "CLUSTER.yaml");
  if (!text.ok()) return text.status();
  return ParseClusterSpec(*text, path, check_files);
}

absl::StatusOr<std::string> ReadRunConfig(const ClusterSpec& spec) {
  return ReadText(spec.config_path, "run config");
}

absl::StatusOr<std::string> ReadToken(const ClusterSpec& spec) {
  absl::StatusOr<std::string> token = ReadText(spec.token_path, "token");
  if (!token.ok()) return token.status();
  std::string t(absl::StripTrailingAsciiWhitespace(*token));
  if (t.empty()) {
    return ConfigError{spec.path, "token_file", spec.token_file,
                       "a file holding the token (it is empty)"}
        .ToStatus();
  }
  return t;
}

absl::StatusOr<std::vector<std::string>> ReadTlsFiles(const ClusterSpec& spec) {
  std::vector<std::string> out;
  for (const std::string* path :
       {&spec.tls.cert_path, &spec.tls.key_path, &spec.tls.ca_path}) {
    absl::StatusOr<std::string> text = ReadText(*path, "TLS file");
    if (!text.ok()) return text.status();
    out.push_back(*std::move(text));
  }
  return out;
}

absl::Status CheckRunConfig(const ClusterSpec& spec) {
  const auto load = [&](const RoleSpec& role) {
    std::vector<std::string> overrides = RoleOverrides(spec, role);
    // As the pods' flags order them: the spec's, then the role's.
    return LoadConfig(spec.config_path, overrides);
  };
  absl::StatusOr<Config> learner = load(spec.learner);
  if (!learner.ok()) return learner.status();
  absl::StatusOr<Config> infer = load(spec.inference);
  if (!infer.ok()) return infer.status();
  absl::StatusOr<Config> rollout = load(spec.rollout);
  if (!rollout.ok()) return rollout.status();
  if (infer->run.mode == "sync" && spec.inference.replicas != 1) {
    return ConfigError{spec.path, "inference.replicas",
                       absl::StrCat(spec.inference.replicas),
                       "1 when the run config's run.mode is sync (one "
                       "inference server holds the barrier)"}
        .ToStatus();
  }
  return CheckPodsHaveTheirGpus(spec, *learner, *infer, *rollout);
}

std::vector<std::string> RoleOverrides(const ClusterSpec& spec,
                                       const RoleSpec& role) {
  std::vector<std::string> out = {
      absl::StrCat("cluster.rollout_workers=", spec.rollout.replicas)};
  out.insert(out.end(), spec.overrides.begin(), spec.overrides.end());
  out.insert(out.end(), role.overrides.begin(), role.overrides.end());
  return out;
}

}  // namespace rlvla3::kube
