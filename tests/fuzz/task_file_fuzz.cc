// Fuzzes the task-file loader (envs/task_file.h): a user's YAML task beside
// a small MJCF body file it may name as scene_mjcf. Properties: never
// crashes or hangs (a scene_mjcf naming a folder or /dev/zero included); a
// refusal says why; an accepted task has a name and an instruction.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "envs/task_file.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

constexpr char kBody[] = R"(<mujoco model="block">
  <worldbody>
    <body name="purple_block" pos="0 0 0.02">
      <freejoint/>
      <geom type="box" size="0.02 0.02 0.02" rgba="0.5 0.2 0.8 1" mass="0.05"/>
    </body>
  </worldbody>
</mujoco>
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rlvla3::fuzz::FuzzFile file(data, size, "task.yaml");
  {
    std::ofstream body(file.dir() + "/block.xml");
    body << kBody;
    if (!body) std::abort();
  }
  absl::StatusOr<rlvla3::TaskSpec> t = rlvla3::LoadTaskFile(file.path());
  if (!t.ok()) {
    if (t.status().message().empty()) std::abort();
    return 0;
  }
  if (t->name.empty() || t->instruction.empty()) std::abort();
  return 0;
}
