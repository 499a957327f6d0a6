// TorchScriptPolicy's load-time probe: one blank observation of the declared
// (or TinyVLA's) shapes through the module, its output checked against the
// declaration. Whatever the module throws (c10::Error, TorchScript's own
// JITException from a `raise`) is refused naming the method and the shapes
// it was given, never left to std::terminate.
#include <torch/script.h>
#include <torch/torch.h>

#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "policies/torchscript_policy.h"

namespace rlvla3 {
namespace {

std::string Shape(const at::Tensor& t) { return c10::str(t.sizes()); }

// What an exception from a module says: c10's without its C++ backtrace.
std::string WhatOf(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) {
    return c->what_without_backtrace();
  }
  return e.what();
}

}  // namespace

// One blank observation of the declared (or TinyVLA's) shapes through the
// module: output of another shape is refused here, not in the run.
absl::Status TorchScriptPolicy::Probe(const std::string& path) {
  PolicyInput probe;
  probe.text = torch::zeros({1, 1}, torch::kLong);
  probe.text_len = torch::ones({1}, torch::kLong);
  if (!interface_) {
    probe.images = torch::zeros({1, 2, 8, 8, 3}, torch::kByte);
    probe.proprio = torch::zeros({1, 8});
    try {
      ActResult r = Act(probe, true);
      if (r.tokens.dim() != 3 || r.tokens.size(2) != 7) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": act() must return tokens of shape [B, K, 7]"));
      }
      chunk_ = static_cast<int>(r.tokens.size(1));
    } catch (const std::exception& e) {  // c10::Error, JITException, ...
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ": act() failed on a probe batch (images [1, 2, 8, 8, "
                       "3] uint8, proprio [1, 8], text [1, 1]): ",
                       WhatOf(e)));
    }
    return absl::OkStatus();
  }
  // The instruction as the run passes it: instruction.max_len ids (padding
  // after a one-id instruction).
  probe.text = torch::zeros({1, interface_->instruction.max_len}, torch::kLong);
  std::vector<at::Tensor> images;
  for (const CameraSpec& c : interface_->cameras) {
    images.push_back(torch::zeros({1, c.height, c.width, 3}, torch::kByte));
  }
  probe.proprio = torch::zeros({1, interface_->proprio});
  at::Tensor params, values;
  try {
    torch::NoGradGuard no_grad;
    Heads(images, probe, &params, &values);
  } catch (const std::exception& e) {  // c10::Error, JITException, ...
    std::string shapes;
    for (const at::Tensor& t : images) shapes += Shape(t) + " uint8, ";
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": heads() failed on a blank observation of the declared shapes (",
        shapes, "proprio ", Shape(probe.proprio), ", text ", Shape(probe.text),
        " int64 of length 1): ", WhatOf(e)));
  }
  const ActionSpace& a = interface_->action;
  const std::string want = absl::StrCat(
      "[1, ", chunk_, ", ", head_->width(), "] (1 observation, chunk ", chunk_,
      ", ", head_->width(), " per step for ", a.size, " action dimensions)");
  if (params.dim() != 3 || params.size(0) != 1 || params.size(1) != chunk_ ||
      params.size(2) != head_->width() || !params.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": heads() returned params ", Shape(params), " ",
                     c10::toString(params.scalar_type()),
                     "; the declaration needs float ", want));
  }
  if (values.dim() != 1 || values.size(0) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": heads() returned values ", Shape(values),
                     "; expected [1] (one per observation)"));
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
