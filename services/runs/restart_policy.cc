#include "services/runs/restart_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

ExitDecision RestartPolicy::OnExit(Clock::time_point now,
                                   Clock::time_point started_at, int exit_code,
                                   bool learner) {
  ExitDecision d;
  if (exit_code == 0 && learner) {
    d.end_run = true;
    d.run_exit_code = 0;
    d.why = "finished (exit code 0: rl.max_steps or rl.duration_s reached)";
    return d;
  }
  if (exit_code == 2) {
    d.end_run = true;
    d.run_exit_code = 2;
    d.why = "refused its configuration (exit code 2); restarting cannot help";
    return d;
  }
  crashes_.push_back(now);
  while (!crashes_.empty() && now - crashes_.front() > o_.crash_window) {
    crashes_.pop_front();
  }
  if (static_cast<int>(crashes_.size()) >= o_.max_crashes) {
    d.end_run = true;
    d.run_exit_code = 1;
    d.why = absl::StrCat(
        "keeps crashing: ", crashes_.size(), " times in ",
        std::chrono::duration_cast<std::chrono::seconds>(now - crashes_.front())
            .count(),
        " s (limit ", o_.max_crashes, " in ", o_.crash_window.count(), " s)");
    return d;
  }
  if (now - started_at > o_.stable_run) restarts_ = 0;
  const int64_t shift = std::min(restarts_, 5);
  d.delay = std::min(o_.max_delay, std::chrono::seconds(int64_t{1} << shift));
  d.restart = ++restarts_;
  d.why = absl::StrCat("restart #", d.restart, " in ", d.delay.count(), " s");
  return d;
}

}  // namespace rlvla3
