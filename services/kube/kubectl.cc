#include "services/kube/kubectl.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace rlvla3::kube {
namespace {

constexpr char kRoles[][10] = {"learner", "inference", "rollout"};

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// A file descriptor closed on scope exit.
class Fd {
 public:
  Fd() = default;
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int* ptr() { return &fd_; }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// SIGPIPE ignored while it lives: a child that exits without reading its
// stdin gives EPIPE instead of killing us.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_);
  }
  ~IgnoreSigpipe() { sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

// Starts `argv` with its stdin, stdout and stderr on pipes (ends in `child`:
// [0] stdin read end, [1] stdout write end, [2] stderr write end).
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv,
                            const int child[3]) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (posix_spawn_file_actions_init(&actions) != 0) return Errno("spawn");
  if (posix_spawnattr_init(&attr) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return Errno("spawn");
  }
  sigset_t defaults, mask;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigemptyset(&mask);
  int rc = 0;
  for (int fd = 0; fd < 3 && rc == 0; ++fd) {
    rc = posix_spawn_file_actions_adddup2(&actions, child[fd], fd);
  }
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &defaults);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &mask);
  if (rc == 0) {
    rc = posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  }
  pid_t pid = -1;
  if (rc == 0) {
    rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(),
                     environ);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  }
  return pid;
}

// Feeds `input` to `in` and drains `out`/`err` until both close.
absl::Status Exchange(Fd& in, Fd& out, Fd& err, const std::string& input,
                      absl::Time deadline, CommandResult* r) {
  size_t written = 0;
  if (input.empty()) in.Close();
  char buf[65536];
  while (out.get() >= 0 || err.get() >= 0) {
    pollfd fds[3] = {
        {out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}, {in.get(), POLLOUT, 0}};
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return absl::DeadlineExceededError("timed out");
    const int n = poll(fds, 3, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (n < 0 && errno != EINTR) return Errno("poll");
    for (int i = 0; n > 0 && i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        (i == 0 ? r->out : r->err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? out : err).Close();
      }
    }
    if (n > 0 && fds[2].fd >= 0 && fds[2].revents != 0) {
      const ssize_t put =
          write(in.get(), input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EINTR && errno != EAGAIN) ||
          written == input.size()) {
        in.Close();  // all written, or the child stopped reading (EPIPE)
      }
    }
  }
  return absl::OkStatus();
}

std::string FirstLine(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) return std::string(line);
  }
  return "";
}

using Json = nlohmann::json;

// j[key] if j is an object holding key, else nullptr.
const Json* Child(const Json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}

std::string StringAt(const Json* j, const char* key) {
  const Json* v = Child(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

PodState ParsePod(const Json& item) {
  PodState p;
  const Json* meta = Child(&item, "metadata");
  const Json* status = Child(&item, "status");
  p.name = StringAt(meta, "name");
  p.role = StringAt(Child(meta, "labels"), "app.kubernetes.io/component");
  p.phase = StringAt(status, "phase");
  const bool deleting = Child(meta, "deletionTimestamp") != nullptr;
  if (deleting) p.phase = "Terminating";
  if (const Json* conds = Child(status, "conditions");
      conds && conds->is_array()) {
    for (const Json& c : *conds) {
      const std::string type = StringAt(&c, "type");
      const std::string value = StringAt(&c, "status");
      if (type == "Ready") p.ready = value == "True" && !deleting;
      if (type == "PodScheduled" && value == "False") {
        p.reason = StringAt(&c, "reason");
      }
    }
  }
  if (const Json* cs = Child(status, "containerStatuses");
      cs && cs->is_array()) {
    for (const Json& c : *cs) {
      if (const Json* n = Child(&c, "restartCount"); n && n->is_number()) {
        p.restarts += n->get<int64_t>();
      }
      const Json* state = Child(&c, "state");
      for (const char* s : {"waiting", "terminated"}) {
        const std::string why = StringAt(Child(state, s), "reason");
        if (!why.empty() && p.reason.empty()) p.reason = why;
      }
    }
  }
  return p;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& input,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("no command");
  Fd pipes[3][2];  // stdin, stdout, stderr: [read end, write end]
  for (auto& p : pipes) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe");
    *p[0].ptr() = fds[0];
    *p[1].ptr() = fds[1];
  }
  const int child[3] = {pipes[0][0].get(), pipes[1][1].get(),
                        pipes[2][1].get()};
  IgnoreSigpipe ignore_sigpipe;
  absl::StatusOr<pid_t> pid = Spawn(argv, child);
  if (!pid.ok()) return pid.status();
  for (int i = 0; i < 3; ++i) pipes[i][i == 0 ? 0 : 1].Close();
  CommandResult r;
  absl::Status s = fcntl(pipes[0][1].get(), F_SETFL, O_NONBLOCK) == 0
                       ? Exchange(pipes[0][1], pipes[1][0], pipes[2][0], input,
                                  absl::Now() + timeout, &r)
                       : Errno("fcntl");
  if (!s.ok()) kill(*pid, SIGKILL);
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0) {
    if (errno != EINTR) return Errno("waitpid");
  }
  if (absl::IsDeadlineExceeded(s)) {
    return absl::DeadlineExceededError(absl::StrCat(
        argv[0], " did not finish within ", absl::FormatDuration(timeout)));
  }
  if (!s.ok()) return s;
  r.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

absl::StatusOr<std::string> FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "", ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return absl::NotFoundError(absl::StrCat(name, " not found on PATH"));
}

absl::StatusOr<std::vector<PodState>> ParsePods(const std::string& json) {
  Json list = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  const Json* items = Child(&list, "items");
  if (items == nullptr || !items->is_array()) {
    return absl::InvalidArgumentError(
        "kubectl get pods: expected a JSON PodList with items");
  }
  std::vector<PodState> pods;
  for (const Json& item : *items) pods.push_back(ParsePod(item));
  return pods;
}

std::vector<RoleState> Summarize(const ClusterSpec& spec,
                                 const std::vector<PodState>& pods) {
  std::vector<RoleState> roles;
  for (const char* role : kRoles) {
    RoleState r;
    r.role = role;
    r.desired = r.role == "learner"     ? spec.learner.replicas
                : r.role == "inference" ? spec.inference.replicas
                                        : spec.rollout.replicas;
    for (const PodState& p : pods) {
      if (p.role != r.role) continue;
      r.ready += p.ready ? 1 : 0;
      r.restarts += p.restarts;
      ++r.phases[p.phase.empty() ? "Unknown" : p.phase];
      if (!p.reason.empty() && !p.ready) r.reasons.insert(p.reason);
    }
    roles.push_back(std::move(r));
  }
  return roles;
}

bool AllReady(const std::vector<RoleState>& roles) {
  for (const RoleState& r : roles) {
    if (r.ready < r.desired) return false;
  }
  return true;
}

std::string ProgressLine(const std::vector<RoleState>& roles) {
  std::vector<std::string> parts;
  for (const RoleState& r : roles) {
    std::string part =
        absl::StrCat(r.role, " ", r.ready, "/", r.desired, " ready");
    if (!r.reasons.empty()) {
      absl::StrAppend(&part, " (", absl::StrJoin(r.reasons, ", "), ")");
    }
    parts.push_back(std::move(part));
  }
  return absl::StrJoin(parts, "  ");
}

absl::StatusOr<Kubectl> Kubectl::Find() {
  absl::StatusOr<std::string> path = FindOnPath("kubectl");
  if (!path.ok()) {
    return absl::NotFoundError(
        "kubectl not found on PATH: install kubectl or use --dry-run to print "
        "the manifests");
  }
  return Kubectl(*path);
}

absl::StatusOr<std::string> Kubectl::Run(const std::vector<std::string>& args,
                                         const std::string& input,
                                         absl::Duration timeout,
                                         const std::string& secret) const {
  std::vector<std::string> argv = {path_};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r = RunCommand(argv, input, timeout);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) return r->out;
  std::string err(absl::StripTrailingAsciiWhitespace(r->err));
  if (!secret.empty()) absl::StrReplaceAll({{secret, "<redacted>"}}, &err);
  return absl::UnavailableError(
      absl::StrCat("kubectl ", args[0], " (exit ", r->exit_code, "): ", err));
}

absl::Status Kubectl::CheckCluster() const {
  absl::StatusOr<CommandResult> r =
      RunCommand({path_, "version", "-o", "json", "--request-timeout=10s"}, "",
                 absl::Seconds(30));
  if (r.ok() && r->exit_code == 0) return absl::OkStatus();
  std::string why;
  if (!r.ok()) {
    why = std::string(r.status().message());
  } else {
    why = FirstLine(r->err);
    if (why.empty()) why = absl::StrCat("exit code ", r->exit_code);
  }
  return absl::UnavailableError(absl::StrCat(
      "cannot reach the Kubernetes cluster (kubectl version): ", why));
}

absl::StatusOr<std::string> Kubectl::Apply(const std::string& manifests,
                                           const std::string& secret) const {
  return Run({"apply", "-f", "-", "--request-timeout=60s"}, manifests,
             absl::Minutes(5), secret);
}

absl::StatusOr<std::string> Kubectl::Delete(
    const std::string& manifests) const {
  return Run({"delete", "-f", "-", "--ignore-not-found", "--wait=true",
              "--request-timeout=60s"},
             manifests, absl::Minutes(10));
}

absl::StatusOr<std::vector<PodState>> Kubectl::Pods(
    const ClusterSpec& spec) const {
  absl::StatusOr<std::string> out =
      Run({"get", "pods", "-n", spec.ns, "-l",
           absl::StrCat("app.kubernetes.io/instance=", spec.name), "-o", "json",
           "--request-timeout=20s"},
          "", absl::Seconds(60));
  if (!out.ok()) return out.status();
  return ParsePods(*out);
}

}  // namespace rlvla3::kube
