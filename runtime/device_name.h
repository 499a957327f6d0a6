// File: runtime/device_name.h
// -----------------------------------------------------------------------------
// A device as the config writes it: "cpu", "cuda" (the first GPU) or
// "cuda:N". Parsing the name says nothing about this machine: a config may
// name the GPU of the machine it will run on. policies/device.h turns a name
// into a LibTorch device once it has checked the machine has it.
//
// Example:
//   std::optional<DeviceName> d = ParseDeviceName("cuda:1");
//   // d->cuda == true, d->index == 1; ParseDeviceName("gpu") is nullopt
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_DEVICE_NAME_H_
#define RLVLA3_RUNTIME_DEVICE_NAME_H_

#include <cctype>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace rlvla3 {

struct DeviceName {
  bool cuda = false;
  int index = 0;  // the GPU's index ("cuda" is 0)
};

inline constexpr int kMaxDeviceIndex = 1023;

inline std::optional<DeviceName> ParseDeviceName(absl::string_view name) {
  if (name == "cpu") return DeviceName{false, 0};
  if (name == "cuda") return DeviceName{true, 0};
  if (!absl::ConsumePrefix(&name, "cuda:") || name.empty()) return std::nullopt;
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  int index = 0;
  if (!absl::SimpleAtoi(name, &index) || index > kMaxDeviceIndex)
    return std::nullopt;
  return DeviceName{true, index};
}

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_DEVICE_NAME_H_
