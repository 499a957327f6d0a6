#include "services/learner/c10d_reducer.h"

// c10d's Gloo process group is compiled only with USE_C10D_GLOO.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/learner/flat_buckets.h"
#ifdef RLVLA3_WITH_NCCL
#include "services/learner/nccl_reducer.h"
#endif

namespace rlvla3 {
namespace {

// Calls `f`; c10d reports failures (a dead peer, a timeout) as exceptions.
template <typename F>
absl::Status Collective(const char* what, F&& f) {
  try {
    f();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("learner group: ", what,
                     " failed (a rank died, hung past the "
                     "collective timeout or cannot be reached): ",
                     e.what()));
  }
}

class GlooReducer final : public GradientReducer {
 public:
  GlooReducer(const ProcessGroupOptions& o,
              c10::intrusive_ptr<c10d::Store> store,
              c10::intrusive_ptr<c10d::ProcessGroupGloo> group)
      : options_(o), store_(std::move(store)), group_(std::move(group)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  int local_rank() const override { return options_.local_rank; }

  absl::Status AllReduceMean(absl::Span<at::Tensor> tensors) override {
    BucketSet& set = buckets_.Get(kAllReduce, tensors);
    return Collective("gradient all-reduce", [&] {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (Bucket& b : set.buckets()) {
        BucketSet::Pack(b, tensors);
        std::vector<at::Tensor> one = {b.flat};
        works.push_back(group_->allreduce(one));
      }
      for (size_t i = 0; i < works.size(); ++i) {
        Wait(works[i]);
        Bucket& b = set.buckets()[i];
        b.flat.div_(static_cast<double>(options_.world_size));
        BucketSet::Unpack(b, tensors);
      }
    });
  }

  // Overlap: buckets over the parameters in reverse order (autograd makes
  // the last layers' gradients first), launched in that fixed order as soon
  // as each is complete.
  void OverlapBegin(absl::Span<const at::Tensor> params) override {
    rev_.assign(params.rbegin(), params.rend());
    overlap_ = &buckets_.Get(kOverlap, rev_);
    const std::vector<Bucket>& bs = overlap_->buckets();
    slot_.resize(params.size());
    pending_.assign(bs.size(), 0);
    for (size_t b = 0; b < bs.size(); ++b) {
      for (size_t k = 0; k < bs[b].numels.size(); ++k) {
        slot_[params.size() - 1 - (bs[b].first + k)] = {b, k};
      }
      pending_[b] = static_cast<int>(bs[b].numels.size());
    }
    reported_.assign(params.size(), false);
    works_.clear();
    launched_ = 0;
    overlap_error_ = absl::OkStatus();
  }

  void OverlapReady(size_t index, const at::Tensor& grad) override {
    if (overlap_ == nullptr || reported_[index]) return;
    Fill(index, grad);
  }

  absl::Status OverlapFinish(absl::Span<at::Tensor> grads) override {
    if (overlap_ == nullptr) return AllReduceMean(grads);
    // What autograd did not report (no gradient this pass) goes as it is.
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!reported_[i]) Fill(i, grads[i]);
    }
    BucketSet* set = overlap_;
    overlap_ = nullptr;
    if (!overlap_error_.ok()) return overlap_error_;
    std::vector<at::Tensor> rev(grads.rbegin(), grads.rend());  // shares
    return Collective("gradient all-reduce", [&] {
      for (size_t b = 0; b < works_.size(); ++b) {
        Wait(works_[b]);
        Bucket& bucket = set->buckets()[b];
        bucket.flat.div_(static_cast<double>(options_.world_size));
        BucketSet::Unpack(bucket, absl::MakeSpan(rev));
      }
    });
  }

  absl::StatusOr<bool> AnyOf(bool local) override {
    flag_.fill_(local ? 1 : 0);
    absl::Status s = Collective("step agreement", [&] {
      std::vector<at::Tensor> one = {flag_};
      Wait(group_->allreduce(one));
    });
    if (!s.ok()) return s;
    return flag_.item<int32_t>() > 0;
  }

  absl::Status Broadcast(absl::Span<at::Tensor> tensors, int root) override {
    BucketSet& set = buckets_.Get(root, tensors);
    return Collective("broadcast", [&] {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      Launch(set, tensors, root, &works);
      for (size_t i = 0; i < works.size(); ++i) {
        Wait(works[i]);
        BucketSet::Unpack(set.buckets()[i], tensors);
      }
    });
  }

  absl::Status GatherShards(absl::Span<at::Tensor> tensors,
                            absl::Span<const int> owners) override {
    // One broadcast per owner, every owner's buckets in flight at once.
    std::vector<std::vector<at::Tensor>> by_owner(options_.world_size);
    for (size_t i = 0; i < tensors.size(); ++i) {
      by_owner[owners[i]].push_back(tensors[i]);  // shares storage
    }
    return Collective("parameter gather", [&] {
      std::vector<std::pair<BucketSet*, int>> sets;
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (int r = 0; r < options_.world_size; ++r) {
        if (by_owner[r].empty()) continue;
        BucketSet& set = buckets_.Get(r, by_owner[r]);
        Launch(set, absl::MakeSpan(by_owner[r]), r, &works);
        sets.emplace_back(&set, r);
      }
      size_t w = 0;
      for (auto& [set, r] : sets) {
        for (Bucket& b : set->buckets()) {
          Wait(works[w++]);
          BucketSet::Unpack(b, absl::MakeSpan(by_owner[r]));
        }
      }
    });
  }

 private:
  static constexpr int kAllReduce = -1, kOverlap = -2;

  // Copies parameter `index`'s final gradient into its bucket; launches the
  // buckets that are complete, in order.
  void Fill(size_t index, const at::Tensor& grad) {
    reported_[index] = true;
    const auto [b, k] = slot_[index];
    Bucket& bucket = overlap_->buckets()[b];
    bucket.flat.narrow(0, bucket.offsets[k], bucket.numels[k])
        .copy_(grad.reshape(-1));
    --pending_[b];
    while (launched_ < pending_.size() && pending_[launched_] == 0 &&
           overlap_error_.ok()) {
      Bucket& ready = overlap_->buckets()[launched_];
      overlap_error_ = Collective("gradient all-reduce", [&] {
        std::vector<at::Tensor> one = {ready.flat};
        works_.push_back(group_->allreduce(one));
      });
      ++launched_;
    }
  }

  void Wait(const c10::intrusive_ptr<c10d::Work>& w) {
    w->wait(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.timeout)));
  }
  // Starts the broadcast of every bucket of `set` from `root`.
  void Launch(BucketSet& set, absl::Span<at::Tensor> tensors, int root,
              std::vector<c10::intrusive_ptr<c10d::Work>>* works) {
    for (Bucket& b : set.buckets()) {
      if (options_.rank == root) BucketSet::Pack(b, tensors);
      std::vector<at::Tensor> one = {b.flat};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      works->push_back(group_->broadcast(one, opts));
    }
  }
  const ProcessGroupOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  BucketCache buckets_{options_.bucket_bytes};
  // The overlapped all-reduce in progress (OverlapBegin .. OverlapFinish).
  BucketSet* overlap_ = nullptr;
  std::vector<at::Tensor> rev_;                  // parameters, reversed
  std::vector<std::pair<size_t, size_t>> slot_;  // (bucket, k) per index
  std::vector<int> pending_;                     // unfilled, per bucket
  std::vector<bool> reported_;
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  size_t launched_ = 0;
  absl::Status overlap_error_;
  at::Tensor flag_ = torch::zeros({1}, torch::kInt32);
};

absl::StatusOr<int> IntFromEnvironment(const char* name, int fallback, int lo,
                                       int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  int out = 0;
  if (!absl::SimpleAtoi(v, &out) || out < lo || out > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, "=", v, ": expected an integer in [", lo, ", ", hi, "]"));
  }
  return out;
}

}  // namespace

absl::StatusOr<ProcessGroupOptions> ProcessGroupOptionsFromEnvironment(
    const std::string& backend, absl::Duration timeout) {
  ProcessGroupOptions o;
  o.backend = backend;
  o.timeout = timeout;
  if (const char* a = std::getenv("MASTER_ADDR"); a != nullptr && *a != '\0') {
    o.master_addr = a;
  }
  absl::StatusOr<int> port = IntFromEnvironment("MASTER_PORT", 29500, 1, 65535);
  if (!port.ok()) return port.status();
  absl::StatusOr<int> world = IntFromEnvironment("WORLD_SIZE", 1, 1, 4096);
  if (!world.ok()) return world.status();
  absl::StatusOr<int> rank = IntFromEnvironment("RANK", 0, 0, *world - 1);
  if (!rank.ok()) return rank.status();
  // This rank's device on its machine (torchrun's LOCAL_RANK; else RANK).
  absl::StatusOr<int> local = IntFromEnvironment("LOCAL_RANK", *rank, 0, 4095);
  if (!local.ok()) return local.status();
  o.master_port = *port;
  o.world_size = *world;
  o.rank = *rank;
  o.local_rank = *local;
  return o;
}

namespace {

// The rendezvous every backend starts from: rank 0 hosts the store.
absl::StatusOr<c10::intrusive_ptr<c10d::Store>> ConnectStore(
    const ProcessGroupOptions& o) {
  c10::intrusive_ptr<c10d::Store> store;
  absl::Status s = Collective("rendezvous", [&] {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(o.master_port);
    so.isServer = o.rank == 0;
    so.numWorkers = static_cast<std::size_t>(o.world_size);
    so.waitWorkers = true;
    so.timeout =
        std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout));
    store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
  });
  if (!s.ok()) return s;
  return store;
}

absl::StatusOr<std::unique_ptr<GradientReducer>> ConnectGloo(
    const ProcessGroupOptions& o, c10::intrusive_ptr<c10d::Store> store) {
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  absl::Status s = Collective("rendezvous", [&] {
    auto go = c10d::ProcessGroupGloo::Options::create(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout)));
    // Loopback runs bind to loopback; others to this host's address.
    const bool local =
        o.master_addr.rfind("127.", 0) == 0 || o.master_addr == "localhost";
    go->devices.push_back(
        local ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
              : c10d::ProcessGroupGloo::createDefaultDevice());
    go->threads = 2;
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank,
                                                        o.world_size, go);
  });
  if (!s.ok()) return s;
  return std::unique_ptr<GradientReducer>(
      new GlooReducer(o, std::move(store), std::move(group)));
}

#ifdef RLVLA3_WITH_NCCL
// NCCL on the tensors' device pointers; its unique id crosses the store.
absl::StatusOr<std::unique_ptr<GradientReducer>> ConnectNccl(
    const ProcessGroupOptions& o, c10::intrusive_ptr<c10d::Store> store) {
  constexpr char kKey[] = "rlvla3/nccl_unique_id";
  std::string id;
  if (o.rank == 0) {
    absl::StatusOr<std::string> made = NewNcclUniqueId();
    if (!made.ok()) return made.status();
    id = *made;
  }
  absl::Status s = Collective("rendezvous", [&] {
    if (o.rank == 0) {
      store->set(kKey, std::vector<uint8_t>(id.begin(), id.end()));
    } else {
      const std::vector<uint8_t> v = store->get(kKey);
      id.assign(v.begin(), v.end());
    }
  });
  if (!s.ok()) return s;
  return MakeNcclReducer(
      {o.rank, o.world_size, o.local_rank, o.timeout, o.bucket_bytes}, id);
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<GradientReducer>> ConnectProcessGroup(
    const ProcessGroupOptions& o) {
  if (o.backend != "gloo" && o.backend != "nccl") {
    return absl::InvalidArgumentError(
        absl::StrCat("learner group backend ", o.backend, ": gloo or nccl"));
  }
#ifndef RLVLA3_WITH_NCCL
  if (o.backend == "nccl") {
    return absl::UnimplementedError(
        "learner group backend nccl: this build has gloo only (configure "
        "with -DRLVLA3_WITH_NCCL=ON)");
  }
#endif
  absl::StatusOr<c10::intrusive_ptr<c10d::Store>> store = ConnectStore(o);
  if (!store.ok()) return store.status();
#ifdef RLVLA3_WITH_NCCL
  if (o.backend == "nccl") return ConnectNccl(o, *std::move(store));
#endif
  return ConnectGloo(o, *std::move(store));
}

absl::StatusOr<std::unique_ptr<GradientReducer>>
JoinProcessGroupFromEnvironment(
    const std::string& backend, absl::Duration timeout, bool alone_is_local,
    const std::function<void(const ProcessGroupOptions&)>& before_join) {
  absl::StatusOr<ProcessGroupOptions> o =
      ProcessGroupOptionsFromEnvironment(backend, timeout);
  if (!o.ok()) return o.status();
  if (alone_is_local && o->world_size == 1) return MakeLocalReducer();
  if (before_join) before_join(*o);
  return ConnectProcessGroup(*o);
}

}  // namespace rlvla3
