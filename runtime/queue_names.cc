#include "runtime/bounded_queue.h"

namespace rlvla3 {

absl::string_view OverflowPolicyName(OverflowPolicy p) {
  switch (p) {
    case OverflowPolicy::kBlock:
      return "block";
    case OverflowPolicy::kDropOldest:
      return "drop_oldest";
    case OverflowPolicy::kReject:
      return "reject";
  }
  return "unknown";
}

absl::string_view QueueStatusName(QueueStatus s) {
  switch (s) {
    case QueueStatus::kOk:
      return "ok";
    case QueueStatus::kTimeout:
      return "timeout";
    case QueueStatus::kFull:
      return "full";
    case QueueStatus::kClosed:
      return "closed";
  }
  return "unknown";
}

}  // namespace rlvla3
