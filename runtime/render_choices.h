// File: runtime/render_choices.h
// -----------------------------------------------------------------------------
// Who renders an env's cameras and how its images are read back: the enums
// behind env.render_backend and env.readback, with their names once (the
// config's choices, envs' parsing, kube's GPU check).
//
// Example:
//   std::optional<RenderBackend> b = kRenderBackendNames.Parse("mesa");
//   const char* name = kReadbackNames.Name(Readback::kBatched);  // "batched"
// -----------------------------------------------------------------------------
#ifndef RLVLA3_RUNTIME_RENDER_CHOICES_H_
#define RLVLA3_RUNTIME_RENDER_CHOICES_H_

#include "runtime/enum_names.h"

namespace rlvla3 {

// A GPU's EGL device, Mesa llvmpipe, or auto (a GPU's where there is one).
enum class RenderBackend { kAuto, kGpu, kMesa };
inline constexpr EnumNames<RenderBackend, 3> kRenderBackendNames{
    {{{RenderBackend::kAuto, "auto"},
      {RenderBackend::kGpu, "gpu"},
      {RenderBackend::kMesa, "mesa"}}}};

// Images read back once per env worker's sweep (batched) or per image.
enum class Readback { kAuto, kPerImage, kBatched };
inline constexpr EnumNames<Readback, 3> kReadbackNames{
    {{{Readback::kAuto, "auto"},
      {Readback::kBatched, "batched"},
      {Readback::kPerImage, "per_image"}}}};

}  // namespace rlvla3

#endif  // RLVLA3_RUNTIME_RENDER_CHOICES_H_
