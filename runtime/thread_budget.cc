#include "runtime/thread_budget.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

absl::Status ApplyThreadBudget(const ThreadsConfig& threads) {
  try {
    at::set_num_threads(static_cast<int>(threads.torch_intra_op));
    at::set_num_interop_threads(static_cast<int>(threads.torch_inter_op));
  } catch (const c10::Error& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("LibTorch thread pools: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
