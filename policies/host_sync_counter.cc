#include "policies/host_sync_counter.h"

#include <c10/util/Exception.h>

#include <string>

#if defined(RLVLA3_WITH_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace rlvla3 {

#if defined(RLVLA3_WITH_CUDA)

// Takes LibTorch's warnings on this thread: the sync debug mode's ones are
// counted, every other one goes on to the handler that was there before.
class HostSyncCounter::Handler final : public c10::WarningHandler {
 public:
  Handler()
      : previous_(c10::WarningUtils::get_warning_handler()),
        previous_mode_(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::WarningUtils::set_warning_handler(this);
    c10::cuda::warning_state().set_sync_debug_mode(
        c10::cuda::SyncDebugMode::L_WARN);
  }
  ~Handler() override {
    c10::cuda::warning_state().set_sync_debug_mode(previous_mode_);
    c10::WarningUtils::set_warning_handler(previous_);
  }
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchronizing CUDA operation") !=
        std::string::npos) {
      ++count_;
    } else if (previous_ != nullptr) {
      previous_->process(warning);
    }
  }
  int64_t count() const { return count_; }
  void Reset() { count_ = 0; }

 private:
  c10::WarningHandler* previous_;
  c10::cuda::SyncDebugMode previous_mode_;
  int64_t count_ = 0;
};

HostSyncCounter::HostSyncCounter() : handler_(std::make_unique<Handler>()) {}
bool HostSyncCounter::available() const { return true; }
int64_t HostSyncCounter::count() const { return handler_->count(); }
void HostSyncCounter::Reset() { handler_->Reset(); }

#else  // no CUDA: nothing can sync with a GPU, nothing is counted

class HostSyncCounter::Handler {};

HostSyncCounter::HostSyncCounter() = default;
bool HostSyncCounter::available() const { return false; }
int64_t HostSyncCounter::count() const { return 0; }
void HostSyncCounter::Reset() {}

#endif

HostSyncCounter::~HostSyncCounter() = default;

}  // namespace rlvla3
