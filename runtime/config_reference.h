// File: runtime/config_reference.h
// -----------------------------------------------------------------------------
// The config reference: every key of the run config with its type, default,
// accepted values and meaning, as Markdown, from the schema itself
// (DescribeConfig), so docs/config.md is generated and never drifts
// (`rl-vla3 config --reference > docs/config.md`; the test
// Docs.ConfigReferenceIsCurrent compares the two).
//
// Example:
//   std::fputs(ConfigReferenceMarkdown().c_str(), stdout);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_CONFIG_REFERENCE_H_
#define RLVLA3_RUNTIME_CONFIG_REFERENCE_H_

#include <string>

namespace rlvla3 {

// One section per top-level key (run, env, rl, ...), one table row per key,
// in the schema's order, with the defaults a config without the key gets.
std::string ConfigReferenceMarkdown();

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_CONFIG_REFERENCE_H_
