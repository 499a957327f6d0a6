#include "services/learner/nccl_reducer.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/learner/flat_buckets.h"

namespace rlvla3 {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status CudaError(const char* what, cudaError_t e) {
  return absl::UnavailableError(absl::StrCat("learner group (nccl): ", what,
                                             ": ", cudaGetErrorString(e)));
}

absl::Status NcclError(const char* what, ncclResult_t r) {
  return absl::UnavailableError(
      absl::StrCat("learner group (nccl): ", what,
                   " failed (a rank died, hung past the "
                   "collective timeout or cannot be reached): ",
                   ncclGetErrorString(r)));
}

absl::StatusOr<ncclDataType_t> NcclType(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return ncclFloat;
    case at::kDouble:
      return ncclDouble;
    case at::kHalf:
      return ncclHalf;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kInt:
      return ncclInt32;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("learner group (nccl): no NCCL type for ",
                       c10::toString(t.scalar_type())));
  }
}

class NcclReducer final : public GradientReducer {
 public:
  NcclReducer(const NcclGroupOptions& o, ncclComm_t comm, cudaStream_t stream,
              int* flag)
      : options_(o), comm_(comm), stream_(stream), flag_(flag) {}
  ~NcclReducer() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);  // null once aborted
    cudaFree(flag_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  // Its GPU (LOCAL_RANK modulo the machine's GPUs), as the learner takes it.
  int local_rank() const override { return options_.device; }
  absl::Status AwaitReady() { return AwaitComm("rendezvous"); }

  absl::Status AllReduceMean(absl::Span<at::Tensor> tensors) override {
    if (absl::Status s = Begin(tensors); !s.ok()) return s;
    BucketSet& set = buckets_.Get(-1, tensors);
    for (Bucket& b : set.buckets()) {
      BucketSet::Pack(b, tensors);
      absl::StatusOr<ncclDataType_t> type = NcclType(b.flat);
      if (!type.ok()) return type.status();
      if (absl::Status s = Issue("gradient all-reduce",
                                 [&] {
                                   return ncclAllReduce(
                                       b.flat.data_ptr(), b.flat.data_ptr(),
                                       static_cast<size_t>(b.flat.numel()),
                                       *type, ncclAvg, comm_, stream_);
                                 });
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = Finish("gradient all-reduce"); !s.ok()) return s;
    for (Bucket& b : set.buckets()) BucketSet::Unpack(b, tensors);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> AnyOf(bool local) override {
    if (absl::Status s = Device(); !s.ok()) return s;
    const int v = local ? 1 : 0;
    if (cudaError_t e = cudaMemcpyAsync(flag_, &v, sizeof(int),
                                        cudaMemcpyHostToDevice, stream_);
        e != cudaSuccess) {
      return CudaError("flag copy", e);
    }
    if (absl::Status s = Issue("step agreement",
                               [&] {
                                 return ncclAllReduce(flag_, flag_, 1,
                                                      ncclInt32, ncclMax, comm_,
                                                      stream_);
                               });
        !s.ok()) {
      return s;
    }
    // Done (or timed out) first: a copy into pageable memory would block
    // past the timeout on a dead peer.
    if (absl::Status s = Finish("step agreement"); !s.ok()) return s;
    int any = 0;
    if (cudaError_t e =
            cudaMemcpy(&any, flag_, sizeof(int), cudaMemcpyDeviceToHost);
        e != cudaSuccess) {
      return CudaError("flag copy", e);
    }
    return any > 0;
  }

  absl::Status Broadcast(absl::Span<at::Tensor> tensors, int root) override {
    if (absl::Status s = Begin(tensors); !s.ok()) return s;
    BucketSet& set = buckets_.Get(root, tensors);
    if (absl::Status s = LaunchBroadcast(set, tensors, root, false); !s.ok()) {
      return s;
    }
    if (absl::Status s = Finish("broadcast"); !s.ok()) return s;
    for (Bucket& b : set.buckets()) BucketSet::Unpack(b, tensors);
    return absl::OkStatus();
  }

  absl::Status GatherShards(absl::Span<at::Tensor> tensors,
                            absl::Span<const int> owners) override {
    if (absl::Status s = Begin(tensors); !s.ok()) return s;
    std::vector<std::vector<at::Tensor>> by_owner(options_.world_size);
    for (size_t i = 0; i < tensors.size(); ++i) {
      by_owner[owners[i]].push_back(tensors[i]);  // shares storage
    }
    // Every owner's broadcasts in one NCCL group: one launch.
    if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) {
      return NcclError("group start", r);
    }
    std::vector<BucketSet*> sets(options_.world_size, nullptr);
    absl::Status launched;
    for (int r = 0; r < options_.world_size && launched.ok(); ++r) {
      if (by_owner[r].empty()) continue;
      sets[r] = &buckets_.Get(r, by_owner[r]);
      launched =
          LaunchBroadcast(*sets[r], absl::MakeSpan(by_owner[r]), r, true);
    }
    const ncclResult_t ended = ncclGroupEnd();
    if (ended != ncclSuccess && ended != ncclInProgress) {
      return NcclError("parameter gather", ended);
    }
    if (!launched.ok()) return launched;
    // Non-blocking: the group is enqueued only once the communicator says so.
    if (absl::Status s = AwaitComm("parameter gather"); !s.ok()) return s;
    if (absl::Status s = Finish("parameter gather"); !s.ok()) return s;
    for (int r = 0; r < options_.world_size; ++r) {
      if (sets[r] == nullptr) continue;
      for (Bucket& b : sets[r]->buckets()) {
        BucketSet::Unpack(b, absl::MakeSpan(by_owner[r]));
      }
    }
    return absl::OkStatus();
  }

 private:
  // The calling thread's device, and tensors that NCCL can reach.
  absl::Status Begin(absl::Span<at::Tensor> tensors) {
    for (const at::Tensor& t : tensors) {
      if (!t.is_cuda()) {
        return absl::InvalidArgumentError(
            "learner group (nccl): tensors must be on a CUDA device (use "
            "cluster.learner_backend gloo on CPU)");
      }
    }
    return Device();
  }
  absl::Status Device() {
    if (cudaError_t e = cudaSetDevice(options_.device); e != cudaSuccess) {
      return CudaError("cudaSetDevice", e);
    }
    return absl::OkStatus();
  }
  // `grouped`: between ncclGroupStart/End, which enqueues them all at once.
  absl::Status LaunchBroadcast(BucketSet& set, absl::Span<at::Tensor> tensors,
                               int root, bool grouped) {
    for (Bucket& b : set.buckets()) {
      if (options_.rank == root) BucketSet::Pack(b, tensors);
      absl::StatusOr<ncclDataType_t> type = NcclType(b.flat);
      if (!type.ok()) return type.status();
      auto launch = [&] {
        return ncclBroadcast(b.flat.data_ptr(), b.flat.data_ptr(),
                             static_cast<size_t>(b.flat.numel()), *type, root,
                             comm_, stream_);
      };
      if (absl::Status s = Issue("broadcast", launch, !grouped); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
  // Calls an NCCL function of the non-blocking communicator and (unless in a
  // group) waits until it has been enqueued.
  template <typename F>
  absl::Status Issue(const char* what, F&& f, bool await = true) {
    if (comm_ == nullptr) return Aborted(what);
    ncclResult_t r = f();
    if (r != ncclSuccess && r != ncclInProgress) return NcclError(what, r);
    return await ? AwaitComm(what) : absl::OkStatus();
  }
  absl::Status AwaitComm(const char* what) {
    if (comm_ == nullptr) return Aborted(what);
    const auto deadline =
        Clock::now() + absl::ToChronoNanoseconds(options_.timeout);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      if (ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
          r != ncclSuccess) {
        return NcclError(what, r);
      }
      if (state == ncclSuccess) return absl::OkStatus();
      if (state != ncclInProgress) return Abort(what, state);
      if (Clock::now() > deadline) return Abort(what, ncclInProgress);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  // Waits for the stream's work, at most the timeout.
  absl::Status Finish(const char* what) {
    const auto deadline =
        Clock::now() + absl::ToChronoNanoseconds(options_.timeout);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return absl::OkStatus();
      if (e != cudaErrorNotReady) return CudaError(what, e);
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &state) == ncclSuccess &&
          state != ncclSuccess && state != ncclInProgress) {
        return Abort(what, state);
      }
      if (Clock::now() > deadline) return Abort(what, ncclInProgress);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  static absl::Status Aborted(const char* what) {
    return absl::FailedPreconditionError(
        absl::StrCat("learner group (nccl): ", what,
                     ": the communicator was aborted by an earlier failure"));
  }
  absl::Status Abort(const char* what, ncclResult_t why) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
    return NcclError(what, why);
  }

  const NcclGroupOptions options_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  int* flag_;  // device int for AnyOf
  BucketCache buckets_{options_.bucket_bytes};
};

}  // namespace

absl::StatusOr<std::string> NewNcclUniqueId() {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
    return NcclError("unique id", r);
  }
  return std::string(id.internal, sizeof(id.internal));
}

absl::StatusOr<std::unique_ptr<GradientReducer>> MakeNcclReducer(
    const NcclGroupOptions& o, const std::string& unique_id) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learner group (nccl): unique id of ", unique_id.size(), " bytes"));
  }
  std::copy(unique_id.begin(), unique_id.end(), id.internal);
  // LOCAL_RANK (default RANK) modulo this machine's devices: with one GPU
  // per pod that is device 0 whatever the rank.
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess) {
    return CudaError("cudaGetDeviceCount", e);
  }
  if (devices == 0) {
    return absl::FailedPreconditionError(
        "learner group (nccl): no CUDA device on this machine");
  }
  NcclGroupOptions opts = o;
  opts.device = o.device % devices;
  if (cudaError_t e = cudaSetDevice(opts.device); e != cudaSuccess) {
    return CudaError("cudaSetDevice", e);
  }
  cudaStream_t stream = nullptr;
  // Blocking: ordered with libtorch's work on the legacy default stream.
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamDefault);
      e != cudaSuccess) {
    return CudaError("stream", e);
  }
  int* flag = nullptr;
  if (cudaError_t e = cudaMalloc(&flag, sizeof(int)); e != cudaSuccess) {
    cudaStreamDestroy(stream);
    return CudaError("cudaMalloc", e);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init and collectives polled, with the timeout
  ncclComm_t comm = nullptr;
  const ncclResult_t r =
      ncclCommInitRankConfig(&comm, o.world_size, id, o.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    cudaFree(flag);
    cudaStreamDestroy(stream);
    return NcclError("rendezvous", r);
  }
  auto reducer = std::make_unique<NcclReducer>(opts, comm, stream, flag);
  // Every rank has joined once the communicator is ready and one collective
  // went through.
  if (absl::Status s = reducer->AwaitReady(); !s.ok()) return s;
  if (absl::Status s = reducer->AnyOf(false).status(); !s.ok()) return s;
  return std::unique_ptr<GradientReducer>(std::move(reducer));
}

}  // namespace rlvla3
