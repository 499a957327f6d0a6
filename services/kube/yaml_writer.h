// File: services/kube/yaml_writer.h
// -----------------------------------------------------------------------------
// Internal to services/kube: one-line helpers over YAML::Emitter for the
// manifests. Strings are written so that YAML reads them back as the same
// strings: plain when safe, double-quoted otherwise ("2", "true", "20Gi" and
// "0.0.0.0:50051" are quoted, so Kubernetes never sees a number or a bool
// where it expects a string). Multi-line text becomes a literal block.
//
// Example:
//   YAML::Emitter e;
//   e << YAML::BeginMap;
//   yaml::Str(e, "name", "demo-learner");
//   yaml::Int(e, "replicas", 2);
//   yaml::Text(e, "run.yaml", config_text);
//   e << YAML::EndMap;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_KUBE_YAML_WRITER_H_
#define RLVLA3_SERVICES_KUBE_YAML_WRITER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace rlvla3::kube::yaml {

// `s` as a scalar that reads back as the string `s`.
void Scalar(YAML::Emitter& e, const std::string& s);

// "key:" waiting for its value.
void Key(YAML::Emitter& e, const char* key);
void Str(YAML::Emitter& e, const char* key, const std::string& value);
void Int(YAML::Emitter& e, const char* key, int64_t value);
void Bool(YAML::Emitter& e, const char* key, bool value);

// Multi-line `text` as a literal block ending in one newline (trailing blank
// lines dropped) when YAML keeps it as written; else double-quoted.
void Text(YAML::Emitter& e, const char* key, const std::string& text);

// `text` as "# " comment lines of at most 78 characters.
std::string Comment(const std::string& text);

}  // namespace rlvla3::kube::yaml

#endif  // RLVLA3_SERVICES_KUBE_YAML_WRITER_H_
