// File: envs/mujoco_handles.h
// -----------------------------------------------------------------------------
// RAII ownership of MuJoCo's C handles and the two ways rl-vla3 loads a model:
// from an MJCF file, and from an MJCF string generated in memory (MuJoCo 2.2.2
// has no mj_loadXMLString, so the string goes through a heap-allocated mjVFS).
// A model is immutable once loaded and shared by all envs of a task; each env
// owns its own mjData.
//
// Example:
//   absl::StatusOr<MjModelPtr> m = LoadModelFromString(xml, "scene.xml");
//   if (!m.ok()) return m.status();   // MuJoCo's own message + the name
//   MjDataPtr d(mj_makeData(m->get()));
//   mj_step(m->get(), d.get());
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_MUJOCO_HANDLES_H_
#define RLVLA3_ENVS_MUJOCO_HANDLES_H_

#include <mujoco/mujoco.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvla3 {

struct MjModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct MjDataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
struct MjVfsDeleter {
  void operator()(mjVFS* v) const;
};

using MjModelPtr = std::unique_ptr<mjModel, MjModelDeleter>;
using MjDataPtr = std::unique_ptr<mjData, MjDataDeleter>;
using MjVfsPtr = std::unique_ptr<mjVFS, MjVfsDeleter>;

// Loads and compiles an MJCF file; errors carry MuJoCo's message and the path.
absl::StatusOr<MjModelPtr> LoadModelFromFile(const std::string& path);

// Compiles MJCF text held in memory; `name` (e.g. "pick_cube.xml") appears in
// errors and must end in ".xml".
absl::StatusOr<MjModelPtr> LoadModelFromString(absl::string_view xml,
                                               absl::string_view name);

// A fresh mjData for `m`, or an error if MuJoCo could not allocate it.
absl::StatusOr<MjDataPtr> MakeData(const mjModel* m);

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_MUJOCO_HANDLES_H_
