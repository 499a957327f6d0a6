#include "services/learner/c10d_reducer.h"

// c10d's Gloo process group is compiled only with USE_C10D_GLOO.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

// The tensors of one flat bucket: where each sits in the buffer.
struct Bucket {
  at::Tensor flat;
  std::vector<int64_t> offsets, numels;
  size_t first = 0;  // index of the bucket's first tensor
};

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

// Flat buckets for one list of tensors, packed and unpacked in place.
class BucketSet {
 public:
  BucketSet(absl::Span<const at::Tensor> tensors, int64_t bucket_bytes) {
    const int64_t cap =
        std::max<int64_t>(1, bucket_bytes / int64_t{sizeof(float)});
    Bucket cur;
    int64_t size = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const int64_t n = tensors[i].numel();
      if (size > 0 && size + n > cap) {
        Close(&cur, size, tensors, i);
        size = 0;
      }
      cur.offsets.push_back(size);
      cur.numels.push_back(n);
      size += n;
    }
    if (size > 0) Close(&cur, size, tensors, tensors.size());
  }
  std::vector<Bucket>& buckets() { return buckets_; }
  static void Pack(Bucket& b, absl::Span<at::Tensor> tensors) {
    for (size_t k = 0; k < b.numels.size(); ++k) {
      b.flat.narrow(0, b.offsets[k], b.numels[k])
          .copy_(tensors[b.first + k].reshape(-1));
    }
  }
  static void Unpack(Bucket& b, absl::Span<at::Tensor> tensors) {
    for (size_t k = 0; k < b.numels.size(); ++k) {
      at::Tensor& t = tensors[b.first + k];
      t.copy_(b.flat.narrow(0, b.offsets[k], b.numels[k]).view(t.sizes()));
    }
  }

 private:
  // Allocates `cur`'s buffer, stores it and starts the next at `next`.
  void Close(Bucket* cur, int64_t size, absl::Span<const at::Tensor> tensors,
             size_t next) {
    cur->flat = torch::zeros({size}, tensors[cur->first].options());
    buckets_.push_back(std::move(*cur));
    *cur = Bucket();
    cur->first = next;
  }
  std::vector<Bucket> buckets_;
};

class GlooReducer final : public GradientReducer {
 public:
  GlooReducer(const ProcessGroupOptions& o,
              c10::intrusive_ptr<c10d::Store> store,
              c10::intrusive_ptr<c10d::ProcessGroupGloo> group)
      : options_(o), store_(std::move(store)), group_(std::move(group)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }

  absl::Status AllReduceMean(absl::Span<at::Tensor> tensors) override {
    BucketSet& set = Buckets(kAllReduce, tensors);
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
    BucketSet& set = Buckets(root, tensors);
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
        BucketSet& set = Buckets(r, absl::MakeSpan(by_owner[r]));
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
  static constexpr int kAllReduce = -1;

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
  // The buckets of this (collective, tensor list), allocated on first use.
  BucketSet& Buckets(int key, absl::Span<const at::Tensor> tensors) {
    std::vector<int64_t> numels;
    numels.reserve(tensors.size());
    for (const at::Tensor& t : tensors) numels.push_back(t.numel());
    auto k = std::make_pair(key, std::move(numels));
    auto it = sets_.find(k);
    if (it == sets_.end()) {
      it =
          sets_.emplace(std::move(k), BucketSet(tensors, options_.bucket_bytes))
              .first;
    }
    return it->second;
  }

  const ProcessGroupOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::map<std::pair<int, std::vector<int64_t>>, BucketSet> sets_;
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
  o.master_port = *port;
  o.world_size = *world;
  o.rank = *rank;
  return o;
}

absl::StatusOr<std::unique_ptr<GradientReducer>> ConnectProcessGroup(
    const ProcessGroupOptions& o) {
  if (o.backend != "gloo") {
    return absl::UnimplementedError(absl::StrCat(
        "learner group backend ", o.backend,
        ": this build has gloo (nccl needs a build with RLVLA3_WITH_CUDA)"));
  }
  const auto timeout =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout));
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  absl::Status s = Collective("rendezvous", [&] {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(o.master_port);
    so.isServer = o.rank == 0;
    so.numWorkers = static_cast<std::size_t>(o.world_size);
    so.waitWorkers = true;
    so.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    auto go = c10d::ProcessGroupGloo::Options::create(timeout);
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

}  // namespace rlvla3
