// File: services/runs/restart_policy.h
// -----------------------------------------------------------------------------
// RestartPolicy: what `up --local` does when one of its role processes ends,
// as a kubelet's restart policy and crash-loop backoff would, but knowing
// what rl-vla3's exit codes mean:
//   - the learner exits 0 (rl.max_steps or rl.duration_s reached): the run
//     is over, every role stops, `up` exits 0;
//   - any role exits 2 (a config or usage error): restarting cannot help,
//     the run stops, `up` exits 2 naming the role's log;
//   - otherwise a crash: restarted after 1, 2, 4 ... 30 s (the count starts
//     again after a stable minute); the `max_crashes`th crash within
//     `crash_window` stops the run, `up` exits 1 naming the role's log.
// Time is passed in, so the rules are tested without processes.
//
// Example:
//   RestartPolicy policy;                       // one per supervised role
//   ExitDecision d = policy.OnExit(now, started_at, exit_code, is_learner);
//   if (d.end_run) return StopAllAndExit(d.run_exit_code, d.why);
//   restart_at = now + d.delay;
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_RUNS_RESTART_POLICY_H_
#define RLVLA3_SERVICES_RUNS_RESTART_POLICY_H_

#include <chrono>
#include <deque>
#include <string>

namespace rlvla3 {

struct ExitDecision {
  bool end_run = false;
  int run_exit_code = 0;          // when end_run
  std::chrono::seconds delay{0};  // before the restart, when not end_run
  int restart = 0;                // this restart's number (1, 2, ...)
  std::string why;                // one line for the operator
};

class RestartPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int max_crashes = 5;
    std::chrono::seconds crash_window{600};
    std::chrono::seconds stable_run{60};  // resets the backoff
    std::chrono::seconds max_delay{30};
  };
  RestartPolicy() : RestartPolicy(Options{}) {}
  explicit RestartPolicy(Options o) : o_(o) {}

  // A process of this role ended at `now` after starting at `started_at`;
  // `exit_code` >= 0 an exit, < 0 a signal (-signo). `learner`: the role
  // whose clean exit is the end of the run.
  ExitDecision OnExit(Clock::time_point now, Clock::time_point started_at,
                      int exit_code, bool learner);

 private:
  Options o_;
  int restarts_ = 0;                       // since the last stable run
  std::deque<Clock::time_point> crashes_;  // within crash_window
};

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_RUNS_RESTART_POLICY_H_
