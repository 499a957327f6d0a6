#include "services/runs/health_wait.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/stop_signal.h"

namespace rlvla3 {

absl::Status WaitServing(const std::vector<std::string>& addresses,
                         const NetOptions& net, double timeout_s,
                         absl::string_view what, absl::string_view log_hint,
                         absl::FunctionRef<absl::Status()> alive) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(
                                      static_cast<int64_t>(timeout_s * 1000));
  NetOptions quick = net;
  quick.call_timeout = absl::Seconds(1);
  while (Clock::now() < end) {
    if (absl::Status s = alive(); !s.ok()) return s;
    if (StopSignalled()) return absl::CancelledError("stopped");
    bool serving = true;
    for (const std::string& a : addresses) {
      absl::StatusOr<std::string> h = CheckHealth(a, quick);
      serving = serving && h.ok() && *h == "SERVING";
    }
    if (serving) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      what, " not healthy within ", timeout_s, " s; see ", log_hint));
}

}  // namespace rlvla3
