// File: tests/role_process.h
// -----------------------------------------------------------------------------
// A real `rl-vla3 serve ROLE` child process for integration tests: started
// with fork/exec (its own environment, e.g. a token, without touching the
// test's), stdout and stderr to files, ready once it prints
// "ROLE: serving on HOST:PORT". Killed (SIGKILL) if still running when
// destroyed.
//
// Example:
//   RoleProcess p(binary, {"serve", "learner", "--config", c}, {}, dir);
//   ASSERT_TRUE(p.WaitReady(60)) << p.Log();
//   std::string addr = p.address();  ...  p.Signal(SIGTERM); p.Wait();
// -----------------------------------------------------------------------------
#ifndef RLVLA3_TESTS_ROLE_PROCESS_H_
#define RLVLA3_TESTS_ROLE_PROCESS_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rlvla3::testutil {

class RoleProcess {
 public:
  RoleProcess(const std::string& binary, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env,
              const std::string& log_prefix)
      : out_(log_prefix + ".out"), err_(log_prefix + ".err") {
    std::vector<std::string> argv_s = {binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      if (!freopen(out_.c_str(), "w", stdout) ||
          !freopen(err_.c_str(), "w", stderr)) {
        _exit(127);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
  }
  ~RoleProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
  }
  RoleProcess(const RoleProcess&) = delete;
  RoleProcess& operator=(const RoleProcess&) = delete;

  // Waits for the "serving on" line; false if it exited or timed out.
  bool WaitReady(double timeout_s) { return WaitFor("serving on ", timeout_s); }
  // Waits for a stdout line containing `marker`; the rest of the line after
  // it is address().
  bool WaitFor(const std::string& marker, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(int64_t(timeout_s * 1000));
    while (std::chrono::steady_clock::now() < end) {
      std::ifstream in(out_);
      std::string line;
      while (std::getline(in, line)) {
        const auto at = line.find(marker);
        if (at != std::string::npos) {
          address_ = line.substr(at + marker.size());
          return true;
        }
      }
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        Record(status);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void Signal(int sig) {
    if (!exited_) kill(pid_, sig);
  }
  // The exit code (-1 when killed by a signal).
  int Wait() {
    if (!exited_) {
      int status;
      waitpid(pid_, &status, 0);
      Record(status);
    }
    return exit_code_;
  }
  bool running() {
    if (exited_) return false;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) Record(status);
    return !exited_;
  }
  const std::string& address() const { return address_; }
  // Everything it printed on stdout so far.
  std::string Stdout() const {
    std::ifstream in(out_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  pid_t pid() const { return pid_; }
  // The last 3000 characters of its stderr, for failure messages, and the
  // signal that ended it, if one did.
  std::string Log() const {
    std::ifstream in(err_);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    if (s.size() > 3000) s = s.substr(s.size() - 3000);
    if (term_signal_ != 0) {
      s += "\n[ended by signal " + std::to_string(term_signal_) + " (" +
           strsignal(term_signal_) + ")]";
    }
    return s;
  }

 private:
  void Record(int status) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    term_signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }

  std::string out_, err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  int term_signal_ = 0;
  std::string address_;
};

}  // namespace rlvla3::testutil

#endif  // RLVLA3_TESTS_ROLE_PROCESS_H_
