#include "services/runs/local_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rlvla3/v1/services.grpc.pb.h"
#include "runtime/stop_signal.h"
#include "runtime/text_file.h"
#include "services/net/role_status.h"
#include "services/net/roster.h"
#include "services/runs/child_process.h"
#include "services/runs/health_wait.h"
#include "services/runs/restart_policy.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

// One supervised role process.
struct Member {
  Role role;
  int index = 0;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;  // status polls, kept connected
  std::unique_ptr<ChildProcess> process;
  RestartPolicy policy;  // what its exits mean: restart, or the run's end
  Clock::time_point restart_at{};
  Clock::time_point started_at = Clock::now();
  bool waiting_restart = false;
  Clock::time_point last_heard = Clock::now();
  v1::RoleStatus status;
  std::string label() const {
    if (role == Role::kLearner) {
      return index == 0 ? "learner" : absl::StrCat("learner rank ", index);
    }
    return absl::StrCat(RoleName(role), " ", index);
  }
};

// Waits until `m` answers SERVING (or exits, or `timeout_s` passes).
absl::Status WaitHealthy(Member& m, const NetOptions& net, double timeout_s) {
  return WaitServing({m.address}, net, timeout_s,
                     absl::StrCat(m.label(), " at ", m.address),
                     m.process->log_path(), [&]() -> absl::Status {
                       if (!m.process->Poll()) return absl::OkStatus();
                       return absl::UnavailableError(absl::StrCat(
                           m.label(), " exited (", m.process->HowItEnded(),
                           ") before serving; see ", m.process->log_path()));
                     });
}

std::string ProgressLine(double t, const std::vector<Member>& members,
                         double role_timeout_s) {
  double samples = 0, obs = 0, frames = 0;
  uint64_t version = 0, steps = 0, episodes = 0, successes = 0;
  int healthy = 0;
  std::vector<std::string> silent;
  for (const Member& m : members) {
    if (m.role == Role::kLearner && m.index == 0) {
      // The last version heard, also while the learner restarts: versions
      // shown never go backwards.
      version = m.status.policy_version();
      steps = m.status.optimizer_steps();
    }
    const double quiet =
        std::chrono::duration<double>(Clock::now() - m.last_heard).count();
    if (quiet > role_timeout_s || m.waiting_restart) {
      silent.push_back(m.label());
      continue;
    }
    ++healthy;
    switch (m.role) {
      case Role::kLearner:  // rank 0 publishes; every rank trains
        samples += m.status.trained_samples_per_s();
        break;
      case Role::kInference:
        obs += m.status.observations_per_s();
        break;
      case Role::kRollout:
        frames += m.status.env_frames_per_s();
        episodes += m.status.episodes();
        successes += m.status.successes();
        break;
    }
  }
  std::string line = absl::StrFormat(
      "[%5.0fs] version %d, %d steps, %.0f samples/s | %.0f obs/s | %.0f "
      "frames/s, %d episodes (%d successes) | %d/%d roles up",
      t, version, steps, samples, obs, frames, episodes, successes, healthy,
      members.size());
  if (!silent.empty()) {
    absl::StrAppend(&line, " | silent: ", absl::StrJoin(silent, ", "));
  }
  return line;
}

// The run folder's logs/ and up.pid (what `down --local` signals).
absl::Status PrepareRunDir(const UpLocalOptions& o) {
  const std::string logs = o.run_dir + "/logs";
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(logs, ": ", ec.message()));
  return WriteTextFile(o.run_dir + "/up.pid", absl::StrCat(getpid(), "\n"));
}

// One `rl-vla3 serve ROLE` process (not started yet), its log in logs/.
// `metrics_port` (0: none) is its /metrics endpoint's.
absl::StatusOr<Member> MakeMember(const UpLocalOptions& o, Role role, int index,
                                  const std::string& address, int metrics_port,
                                  std::vector<std::string> extra,
                                  std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {o.binary,   "serve",       RoleName(role),
                                   "--config", o.config_path, "--listen",
                                   address};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (metrics_port != 0) {
    argv.insert(argv.end(), {"--set", absl::StrCat("metrics.prometheus_port=",
                                                   metrics_port)});
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(address, o.net);
  if (!channel.ok()) return channel.status();
  Member m;
  m.role = role;
  m.index = index;
  m.address = address;
  m.channel = *std::move(channel);
  const std::string logs = o.run_dir + "/logs";
  const std::string log =
      role == Role::kLearner && index == 0
          ? logs + "/learner.log"
          : absl::StrCat(logs, "/", RoleName(role), "_", index, ".log");
  m.process =
      std::make_unique<ChildProcess>(std::move(argv), log, std::move(env));
  return m;
}

// Every role of the layout: the learner's ranks (one data-parallel group,
// rendezvous at rank 0's host: the torchrun variables; alone when there is
// one rank), the inference servers, the rollout workers.
// Member k serves /metrics at o.metrics_port + k (when that is set).
absl::StatusOr<std::vector<Member>> MakeMembers(const UpLocalOptions& o) {
  std::vector<absl::StatusOr<Member>> made;
  const ClusterLayout& l = o.layout;
  auto metrics_port = [&o, &made] {
    return o.metrics_port == 0 ? 0
                               : o.metrics_port + static_cast<int>(made.size());
  };
  const std::string world = absl::StrCat(l.learner_ranks.size());
  const std::string host = l.learner.substr(0, l.learner.rfind(':'));
  for (size_t r = 0; r < l.learner_ranks.size(); ++r) {
    made.push_back(MakeMember(
        o, Role::kLearner, static_cast<int>(r), l.learner_ranks[r],
        metrics_port(), {},
        {"MASTER_ADDR=" + host, absl::StrCat("MASTER_PORT=", l.rendezvous_port),
         absl::StrCat("RANK=", r), "WORLD_SIZE=" + world}));
  }
  for (size_t i = 0; i < l.inference.size(); ++i) {
    made.push_back(MakeMember(o, Role::kInference, static_cast<int>(i),
                              l.inference[i], metrics_port(),
                              {"--learner", l.learner}));
  }
  const std::string all_inference = absl::StrJoin(l.inference, ",");
  for (size_t w = 0; w < l.rollout.size(); ++w) {
    made.push_back(MakeMember(
        o, Role::kRollout, static_cast<int>(w), l.rollout[w], metrics_port(),
        {"--learner", absl::StrJoin(l.learner_ranks, ","), "--inference",
         all_inference, "--worker", absl::StrCat(w)}));
  }
  std::vector<Member> members;
  for (absl::StatusOr<Member>& m : made) {
    if (!m.ok()) return m.status();
    members.push_back(*std::move(m));
  }
  return members;
}

// Every process is asked at once, then each is waited for, role by role.
void StopAll(std::vector<Member>& members, const UpLocalOptions& o) {
  // Every role is told at once: a learner rank told only after the rollout
  // workers had gone could time out in a collective its peer never joined
  // (no data left to fill its share) and end with the group's error, a
  // failed stop, before it knew the run was stopping.
  for (Member& m : members) m.process->Terminate();
  for (Role r : {Role::kRollout, Role::kInference, Role::kLearner}) {
    // A learner rank may be inside a collective its peers left: it ends
    // within the collective timeout.
    const absl::Duration grace =
        r == Role::kLearner && o.layout.learner_ranks.size() > 1
            ? absl::Seconds(10 + o.collective_timeout_s)
            : absl::Seconds(10);
    for (Member& m : members) {
      if (m.role == r) m.process->Stop(grace);
    }
  }
}

// Starts in order, each kind once the previous ones are healthy. nullopt
// when all serve; else the exit code (after stopping what started).
std::optional<int> StartInOrder(std::vector<Member>& members,
                                const UpLocalOptions& o) {
  for (Role r : {Role::kLearner, Role::kInference, Role::kRollout}) {
    for (Member& m : members) {
      if (m.role != r) continue;
      if (absl::Status s = m.process->Start(); !s.ok()) {
        std::fprintf(stderr, "rl-vla3 up: %s: %s\n", m.label().c_str(),
                     s.ToString().c_str());
        StopAll(members, o);
        return kExitFailure;
      }
    }
    for (Member& m : members) {
      if (m.role != r) continue;
      if (absl::Status s = WaitHealthy(m, o.net, 120); !s.ok()) {
        std::fprintf(stderr, "rl-vla3 up: %s\n", s.ToString().c_str());
        StopAll(members, o);
        if (StopSignalled()) return kExitOk;
        // A role that refused its configuration: the run's error too.
        return m.process->Poll() && m.process->exit_code() == kExitUsage
                   ? kExitUsage
                   : kExitFailure;
      }
      std::printf("up: %s serving on %s (pid %d, log %s)\n", m.label().c_str(),
                  m.address.c_str(), static_cast<int>(m.process->pid()),
                  m.process->log_path().c_str());
    }
  }
  return std::nullopt;
}

// A member waiting out its restart delay is started when it is due.
void RestartWhenDue(Member& m) {
  if (Clock::now() < m.restart_at) return;
  m.waiting_restart = false;
  m.started_at = Clock::now();
  m.last_heard = m.started_at;
  if (absl::Status s = m.process->Start(); !s.ok()) {
    std::fprintf(stderr, "up: %s: %s\n", m.label().c_str(),
                 s.ToString().c_str());
  } else {
    std::printf("up: %s restarted (pid %d)\n", m.label().c_str(),
                static_cast<int>(m.process->pid()));
  }
}

// One look at a member: restarts an inference or rollout process that
// crashed (after its policy's backoff), polls a live one's status. When a
// process ended, its policy's decision: the run's end (any role), or, for a
// learner rank, a restart of the whole group (the caller's).
std::optional<ExitDecision> Supervise(Member& m, const NetOptions& net,
                                      double liveness_s) {
  if (m.waiting_restart) {
    if (m.role != Role::kLearner) RestartWhenDue(m);
    return std::nullopt;
  }
  if (m.process->Poll()) {
    const ExitDecision d =
        m.policy.OnExit(Clock::now(), m.started_at, m.process->exit_code(),
                        m.role == Role::kLearner);
    if (d.end_run || m.role == Role::kLearner) return d;
    std::fprintf(stderr, "up: %s exited (%s); %s\n", m.label().c_str(),
                 m.process->HowItEnded().c_str(), d.why.c_str());
    m.waiting_restart = true;
    m.restart_at = Clock::now() + d.delay;
    return std::nullopt;
  }
  NetOptions quick = net;
  quick.call_timeout = absl::Milliseconds(500);
  absl::StatusOr<v1::RoleStatus> st =
      QueryRoleStatus(m.role, m.channel, m.address, quick);
  if (st.ok()) {
    m.status = *std::move(st);
    m.last_heard = Clock::now();
  } else if (liveness_s > 0 && Clock::now() - m.last_heard >
                                   std::chrono::duration<double>(liveness_s)) {
    // The liveness probe: alive (stopped, hung, deadlocked) but silent. It
    // is killed; the next look restarts it as any crash.
    std::fprintf(stderr,
                 "up: %s answered no status call for %.0f s (alive but "
                 "silent): killed, to be restarted. See %s\n",
                 m.label().c_str(), liveness_s, m.process->log_path().c_str());
    m.process->Kill();
    m.last_heard = Clock::now();
  }
  return std::nullopt;
}

// A learner rank is gone: the data-parallel group cannot go on without it,
// so every rank stops and the group starts again after the backoff; the
// restarted learner resumes from its newest checkpoint (rl.resume) while the
// inference servers and rollout workers wait and reconnect.
void ScheduleLearnerRestart(std::vector<Member>& members, const Member& gone,
                            const ExitDecision& d, const UpLocalOptions& o) {
  const std::string how = gone.process->HowItEnded();
  const std::string label = gone.label(), log = gone.process->log_path();
  for (Member& m : members) {
    if (m.role != Role::kLearner) continue;
    if (!m.process->Poll()) m.process->Stop(absl::Seconds(10));
    m.waiting_restart = true;
    m.restart_at = Clock::now() + d.delay;
  }
  std::fprintf(stderr,
               "up: the %s is gone (%s); restart #%d of the learner's %zu "
               "rank(s) in %d s, resuming from its newest checkpoint. See %s\n",
               label.c_str(), how.c_str(), d.restart,
               o.layout.learner_ranks.size(), static_cast<int>(d.delay.count()),
               log.c_str());
}

// Starts every rank of the learner group once its restart is due.
void RestartLearnerWhenDue(std::vector<Member>& members) {
  for (Member& m : members) {
    if (m.role == Role::kLearner && m.waiting_restart) RestartWhenDue(m);
  }
}

// One progress line per interval until stopped or the duration is over.
int SuperviseUntilStopped(std::vector<Member>& members,
                          const UpLocalOptions& o) {
  const auto t0 = Clock::now();
  auto next = t0;
  while (!StopSignalled()) {
    next +=
        std::chrono::milliseconds(static_cast<int64_t>(o.interval_s * 1000));
    while (Clock::now() < next && !StopSignalled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (o.duration_s > 0 && t >= o.duration_s) break;
    const Member* gone = nullptr;
    ExitDecision group;
    for (Member& m : members) {
      std::optional<ExitDecision> d = Supervise(m, o.net, o.liveness_s);
      if (!d) continue;
      if (d->end_run) {
        std::fprintf(stderr, "up: %s %s; the run ends. See %s\n",
                     m.label().c_str(), d->why.c_str(),
                     m.process->log_path().c_str());
        return d->run_exit_code;
      }
      if (gone == nullptr) {
        gone = &m;
        group = *d;
      }
    }
    if (gone != nullptr) ScheduleLearnerRestart(members, *gone, group, o);
    RestartLearnerWhenDue(members);
    std::printf("%s\n", ProgressLine(t, members, o.role_timeout_s).c_str());
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

int RunUpLocal(const UpLocalOptions& o) {
  if (absl::Status s = PrepareRunDir(o); !s.ok()) {
    std::fprintf(stderr, "rl-vla3 up: %s\n", s.ToString().c_str());
    return kExitFailure;
  }
  InstallStopSignalHandlers();
  absl::StatusOr<std::vector<Member>> made = MakeMembers(o);
  if (!made.ok()) {
    std::fprintf(stderr, "rl-vla3 up: %s\n", made.status().ToString().c_str());
    return kExitUsage;
  }
  std::vector<Member>& members = *made;
  if (std::optional<int> failed = StartInOrder(members, o)) return *failed;
  std::printf(
      "up: %zu roles running; `rl-vla3 down --local` or Ctrl-C stops "
      "them\n",
      members.size());
  std::fflush(stdout);
  int exit_code = SuperviseUntilStopped(members, o);
  std::printf("up: stopping rollout, inference, learner\n");
  std::fflush(stdout);
  StopAll(members, o);
  for (const Member& m : members) {
    // Stopped by us: a learner that then failed to stop cleanly (its last
    // checkpoint may be missing) is the run's failure, said with its log.
    if (m.process->exit_code() != 0 && m.role == Role::kLearner) {
      std::fprintf(stderr, "up: %s did not stop cleanly (%s). See %s\n",
                   m.label().c_str(), m.process->HowItEnded().c_str(),
                   m.process->log_path().c_str());
      if (exit_code == kExitOk) exit_code = kExitFailure;
    }
  }
  std::error_code rm;
  std::filesystem::remove(o.run_dir + "/up.pid", rm);
  return exit_code;
}

namespace {

// Whether `pid` is an `rl-vla3 up` (its argv[1] is "up"): a stale up.pid
// may name a pid the system has since given to another process.
bool IsUpProcess(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  std::string argv0, argv1;
  return in && std::getline(in, argv0, '\0') && std::getline(in, argv1, '\0') &&
         argv1 == "up";
}

}  // namespace

int RunDownLocal(const std::string& run_dir) {
  std::ifstream in(run_dir + "/up.pid");
  std::string text;
  int pid = 0;
  if (!in || !std::getline(in, text) || !absl::SimpleAtoi(text, &pid) ||
      pid <= 0) {
    std::fprintf(stderr, "rl-vla3 down: no run is up in %s (no up.pid)\n",
                 run_dir.c_str());
    return kExitFailure;
  }
  if (kill(pid, 0) != 0) {
    std::fprintf(stderr, "rl-vla3 down: up (pid %d) is not running\n", pid);
    return kExitFailure;
  }
  if (!IsUpProcess(pid)) {
    std::fprintf(stderr,
                 "rl-vla3 down: %s/up.pid names pid %d, which is not an "
                 "`rl-vla3 up` (a stale file): nothing signalled\n",
                 run_dir.c_str(), pid);
    return kExitFailure;
  }
  if (kill(pid, SIGTERM) != 0) {
    std::fprintf(stderr, "rl-vla3 down: up (pid %d) is not running\n", pid);
    return kExitFailure;
  }
  // Wait for `up` to stop every role (10 s grace per role kind at most): it
  // removes up.pid last. (kill(pid, 0) alone would also succeed on a zombie
  // `up` its parent has not reaped.)
  const std::string pid_file = run_dir + "/up.pid";
  auto stopping = [&] {
    std::error_code ec;
    return std::filesystem::exists(pid_file, ec) && kill(pid, 0) == 0;
  };
  for (int i = 0; i < 600 && stopping(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (stopping()) {
    std::fprintf(stderr, "rl-vla3 down: up (pid %d) is still stopping\n", pid);
    return kExitFailure;
  }
  std::printf("down: the run in %s is stopped\n", run_dir.c_str());
  return kExitOk;
}

}  // namespace rlvla3
