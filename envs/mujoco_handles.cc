#include "envs/mujoco_handles.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

constexpr int kErrorBufferSize = 1024;

}  // namespace

void MjVfsDeleter::operator()(mjVFS* v) const {
  mj_deleteVFS(v);
  delete v;
}

absl::StatusOr<MjModelPtr> LoadModelFromFile(const std::string& path) {
  char err[kErrorBufferSize] = {0};
  MjModelPtr m(mj_loadXML(path.c_str(), nullptr, err, sizeof(err)));
  if (!m) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": MuJoCo: ", err));
  }
  return m;
}

absl::StatusOr<MjModelPtr> LoadModelFromString(absl::string_view xml,
                                               absl::string_view name) {
  if (!absl::EndsWith(name, ".xml")) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": in-memory MJCF name must end in .xml"));
  }
  // mjVFS is about 2 MB: never on the stack.
  MjVfsPtr vfs(new mjVFS);
  mj_defaultVFS(vfs.get());
  const std::string file(name);
  if (mj_makeEmptyFileVFS(vfs.get(), file.c_str(),
                          static_cast<int>(xml.size())) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, ": MuJoCo VFS is full"));
  }
  const int idx = mj_findFileVFS(vfs.get(), file.c_str());
  std::memcpy(vfs->filedata[idx], xml.data(), xml.size());
  char err[kErrorBufferSize] = {0};
  MjModelPtr m(mj_loadXML(file.c_str(), vfs.get(), err, sizeof(err)));
  if (!m)
    return absl::InvalidArgumentError(absl::StrCat(name, ": MuJoCo: ", err));
  return m;
}

absl::StatusOr<MjDataPtr> MakeData(const mjModel* m) {
  MjDataPtr d(mj_makeData(m));
  if (!d) return absl::ResourceExhaustedError("mj_makeData failed");
  return d;
}

}  // namespace rlvla3
