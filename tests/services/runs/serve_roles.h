// File: tests/services/runs/serve_roles.h
// -----------------------------------------------------------------------------
// `rl-vla3 serve ROLE` as real processes for the multi-process tests: the
// test config (configs/bench_cpu.yaml, 4 envs, one rollout per step, 1 s
// metrics) plus each test's `--set` flags, listening on a free port.
//
// Example:
//   testutil::TestDir dir;
//   auto learner = testutil::Learner(dir, {"--set", "run.mode=sync"});
//   ASSERT_TRUE(learner->WaitReady(120)) << learner->Log();
//   auto inference = testutil::Inference(dir, "inference",
//                                        learner->address(), {});
// -----------------------------------------------------------------------------
#ifndef RLVLA3_TESTS_SERVICES_RUNS_SERVE_ROLES_H_
#define RLVLA3_TESTS_SERVICES_RUNS_SERVE_ROLES_H_

#include <memory>
#include <string>
#include <vector>

#include "tests/role_process.h"
#include "tests/test_dir.h"

namespace rlvla3::testutil {

// `a` followed by the test config and `extra`.
inline std::vector<std::string> Args(
    std::vector<std::string> a, const std::vector<std::string>& extra = {}) {
  for (const char* s :
       {"--config", RLVLA3_SOURCE_DIR "/configs/bench_cpu.yaml", "--set",
        "env.num_envs=4", "--set", "rl.rollouts_per_step=1", "--set",
        "metrics.interval_s=1"}) {
    a.push_back(s);
  }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// `rl-vla3 serve ROLE ...` (not yet ready: callers assert WaitReady).
inline std::unique_ptr<RoleProcess> Serve(
    const TestDir& dir, const std::string& name,
    std::vector<std::string> role_args, const std::vector<std::string>& extra) {
  role_args.insert(role_args.begin(), "serve");
  return std::make_unique<RoleProcess>(RLVLA3_BINARY, Args(role_args, extra),
                                       std::vector<std::string>{},
                                       dir.File(name));
}

// The learner's run folder (its checkpoints) is the test's own: a learner
// resumes from the checkpoints it finds there (rl.resume auto).
inline std::unique_ptr<RoleProcess> Learner(
    const TestDir& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> own = {"--set", "run.out_dir=" + dir.File("runs")};
  own.insert(own.end(), extra.begin(), extra.end());
  return Serve(dir, "learner", {"learner", "--listen", "127.0.0.1:0"}, own);
}

inline std::unique_ptr<RoleProcess> Inference(
    const TestDir& dir, const std::string& name, const std::string& learner,
    const std::vector<std::string>& extra,
    const std::string& listen = "127.0.0.1:0") {
  return Serve(dir, name,
               {"inference", "--listen", listen, "--learner", learner}, extra);
}

inline std::unique_ptr<RoleProcess> Rollout(
    const TestDir& dir, const std::string& worker, const std::string& learner,
    const std::string& inference, const std::vector<std::string>& extra) {
  return Serve(dir, "rollout" + worker,
               {"rollout", "--listen", "127.0.0.1:0", "--learner", learner,
                "--inference", inference, "--worker", worker},
               extra);
}

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_SERVICES_RUNS_SERVE_ROLES_H_
