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
    std::lock_guard<std::mutex> lock(mu_);
    waited = running_ == 0;
  }
  if (!waited) RequestStop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Supervisor::Spawn(std::string name, std::function<absl::Status()> body) {
  {
    std::lock_guard<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok() && first_error_.ok()) {
      first_error_ =
          absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
      stopping_ = true;
      stop = true;
    }
    --running_;
    if (running_ == 0) all_done_.notify_all();
  }
  if (!s.ok()) spdlog::error("{} failed: {}", name, s.ToString());
  if (stop) StopOnce();
}

void Supervisor::StopOnce() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_hook_ran_) return;
    stop_hook_ran_ = true;
  }
  if (on_stop_) on_stop_();
}

void Supervisor::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  StopOnce();
}

bool Supervisor::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

int Supervisor::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

absl::Status Supervisor::Wait() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    all_done_.wait(lock, [this] { return running_ == 0; });
  }
  // Every body has returned; the joins below only reap finished threads.
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

}  // namespace rlvla3
