// Fuzzes the config loader with arbitrary YAML. Properties: never crashes;
// errors are one-line ConfigErrors; an accepted config prints to YAML that
// loads back to the same printed YAML.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/config.h"
#include "runtime/config_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  rlvla3::Config c;
  rlvla3::ConfigSchema schema;
  rlvla3::DescribeConfig(&c, &schema);
  absl::Status s = schema.ApplyYamlText(text, "fuzz.yaml");
  if (!s.ok()) {
    if (!rlvla3::IsConfigError(s)) std::abort();
    return 0;
  }
  const std::string printed = schema.ToYaml();
  rlvla3::Config c2;
  rlvla3::ConfigSchema schema2;
  rlvla3::DescribeConfig(&c2, &schema2);
  if (!schema2.ApplyYamlText(printed, "printed.yaml").ok()) std::abort();
  if (schema2.ToYaml() != printed) std::abort();
  return 0;
}
