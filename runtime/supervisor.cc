#include "runtime/supervisor.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

Supervisor::Supervisor(std::function<void()> on_stop)
    : on_stop_(std::move(on_stop)) {}

Supervisor::~Supervisor() {
  bool waited;
  {
    absl::MutexLock lock(&mu_);
    waited = running_ == 0;
  }
  if (!waited) RequestStop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Supervisor::Spawn(std::string name, std::function<absl::Status()> body) {
  {
    absl::MutexLock lock(&mu_);
    ++running_;
  }
  threads_.emplace_back([this, name = std::move(name),
                         body = std::move(body)]() {
    absl::Status s;
    try {
      s = body();
    } catch (const std::exception& e) {
      s = absl::InternalError(absl::StrCat("uncaught exception: ", e.what()));
    } catch (...) {
      s = absl::InternalError("uncaught non-standard exception");
    }
    Finish(name, std::move(s));
  });
}

void Supervisor::Finish(const std::string& name, absl::Status s) {
  bool stop = false;
  {
    absl::MutexLock lock(&mu_);
    if (!s.ok() && first_error_.ok()) {
      first_error_ =
          absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
      stopping_ = true;
      stop = true;
    }
    --running_;
  }
  if (!s.ok()) spdlog::error("{} failed: {}", name, s.ToString());
  if (stop) StopOnce();
}

void Supervisor::StopOnce() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_hook_ran_) return;
    stop_hook_ran_ = true;
  }
  if (on_stop_) on_stop_();
}

void Supervisor::RequestStop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  StopOnce();
}

bool Supervisor::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

int Supervisor::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

absl::Status Supervisor::Wait() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &running_));
  }
  // Every body has returned; the joins below only reap finished threads.
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  absl::MutexLock lock(&mu_);
  return first_error_;
}

}  // namespace rlvla3
