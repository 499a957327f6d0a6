#include "runtime/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/text_file.h"

namespace rlvla3 {
namespace fs = std::filesystem;

namespace {

constexpr char kComplete[] = "version_";
constexpr char kPartial[] = ".partial-version_";
constexpr char kRejected[] = "rejected-version_";
constexpr char kDeleting[] = ".deleting-version_";
constexpr char kManifest[] = "MANIFEST";
constexpr char kPublished[] = "published_version";
constexpr size_t kKeptRejected = 3;  // rejected-version_V folders kept

absl::Status FsError(const std::string& what, const std::string& path,
                     const std::error_code& ec) {
  return absl::UnavailableError(
      absl::StrCat(path, ": ", what, " failed: ", ec.message()));
}

// fsync(2) of a file or a folder: its data (a file's content, a folder's
// entries) reaches the disk before the caller goes on.
absl::Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": opening to sync failed: ", std::strerror(errno)));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": fsync failed: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

// The version in NAME when it is PREFIX followed by digits only.
bool VersionOf(const std::string& name, const char* prefix, uint64_t* v) {
  const size_t n = std::strlen(prefix);
  if (name.size() <= n || name.compare(0, n, prefix) != 0) return false;
  const std::string digits = name.substr(n);
  if (!std::all_of(digits.begin(), digits.end(),
                   [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return false;
  }
  return absl::SimpleAtoi(digits, v);
}

// Every folder of DIR named PREFIX<version>, in no order.
std::vector<CheckpointInfo> FoldersNamed(const std::string& dir,
                                         const char* prefix) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    uint64_t v = 0;
    if (!it->is_directory(ec)) continue;
    if (VersionOf(it->path().filename().string(), prefix, &v)) {
      out.push_back({it->path().string(), v});
    }
  }
  return out;
}

std::vector<CheckpointInfo> NewestFirst(std::vector<CheckpointInfo> all) {
  std::sort(all.begin(), all.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) {
              return a.version > b.version;
            });
  return all;
}

// The files under ROOT (recursively), as paths relative to it, sorted.
std::vector<std::string> FilesUnder(const std::string& root,
                                    std::error_code& ec) {
  std::vector<std::string> out;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      out.push_back(fs::relative(it->path(), root, ec).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Removes a checkpoint folder so that no reader sees it half removed: it is
// renamed out of the listing first (one atomic step), then deleted.
absl::Status RemoveCheckpointFolder(const std::string& dir,
                                    const CheckpointInfo& c) {
  const std::string gone = absl::StrCat(dir, "/", kDeleting, c.version);
  std::error_code ec;
  fs::remove_all(gone, ec);
  fs::rename(c.path, gone, ec);
  if (ec) return FsError("setting aside for removal", c.path, ec);
  fs::remove_all(gone, ec);
  if (ec) return FsError("removing", gone, ec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint64_t> HashFile(const std::string& path, uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::vector<char> buf(1 << 20);
  uint64_t h = 0x6a09e667f3bcc908ULL, n = 0;
  for (;;) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    size_t i = 0;
    for (; i + 8 <= got; i += 8) {
      uint64_t w;
      std::memcpy(&w, buf.data() + i, 8);
      h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
      h ^= h >> 29;
    }
    for (; i < got; ++i) {
      h = (h ^ static_cast<unsigned char>(buf[i])) * 0x100000001B3ULL;
    }
    n += got;
    if (!in) break;
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  *size = n;
  return h ^ n;
}

std::string CheckpointStore::PartialPath(uint64_t version) const {
  return absl::StrCat(dir_, "/", kPartial, version);
}

std::string CheckpointStore::CompletePath(uint64_t version) const {
  return absl::StrCat(dir_, "/", kComplete, version);
}

absl::Status CheckpointStore::CheckWritable() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return FsError("creating the checkpoint folder", dir_, ec);
  const std::string probe = dir_ + "/.write-probe";
  if (absl::Status s = WriteTextFile(probe, "probe\n"); !s.ok()) return s;
  fs::remove(probe, ec);
  if (ec) return FsError("removing a probe file", probe, ec);
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckpointStore::BeginWrite(
    uint64_t version) const {
  const std::string path = PartialPath(version);
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return FsError("removing a stale partial checkpoint", path, ec);
  fs::create_directories(path, ec);
  if (ec) return FsError("creating the partial checkpoint", path, ec);
  return path;
}

absl::StatusOr<std::string> CheckpointStore::Commit(uint64_t version) const {
  const std::string partial = PartialPath(version);
  std::error_code ec;
  const std::vector<std::string> files = FilesUnder(partial, ec);
  if (ec) return FsError("listing", partial, ec);
  if (files.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(partial, ": nothing was written"));
  }
  std::string manifest = absl::StrCat("version ", version, "\n");
  for (const std::string& f : files) {
    uint64_t size = 0;
    absl::StatusOr<uint64_t> h = HashFile(partial + "/" + f, &size);
    if (!h.ok()) return h.status();
    absl::StrAppend(&manifest, "file ", size, " ", *h, " ", f, "\n");
  }
  // The last line: a MANIFEST cut short is told from a whole one.
  absl::StrAppend(&manifest, "files ", files.size(), "\n");
  if (absl::Status s =
          WriteTextFile(absl::StrCat(partial, "/", kManifest), manifest);
      !s.ok()) {
    return s;
  }
  // Durable before it is named whole: every file, MANIFEST and the folder's
  // entries; after the rename, the parent's entry (a power loss then leaves
  // either the partial folder or the whole checkpoint).
  // Folders below the checkpoint's own hold their files' entries too
  // (optimizer/): each is synced, deepest first, then the folder itself.
  std::set<std::string, std::greater<std::string>> folders;
  for (const std::string& f : files) {
    if (absl::Status s = Sync(partial + "/" + f); !s.ok()) return s;
    for (fs::path p = fs::path(f).parent_path(); !p.empty();
         p = p.parent_path()) {
      folders.insert(partial + "/" + p.string());
    }
  }
  if (absl::Status s = Sync(absl::StrCat(partial, "/", kManifest)); !s.ok()) {
    return s;
  }
  for (const std::string& folder : folders) {
    if (absl::Status s = Sync(folder); !s.ok()) return s;
  }
  if (absl::Status s = Sync(partial); !s.ok()) return s;
  const std::string complete = CompletePath(version);
  if (fs::exists(complete, ec)) {
    if (absl::Status s = RemoveCheckpointFolder(dir_, {complete, version});
        !s.ok()) {
      return s;
    }
  }
  fs::rename(partial, complete, ec);
  if (ec) return FsError("renaming into place", partial, ec);
  if (absl::Status s = Sync(dir_); !s.ok()) return s;
  NoteWhole(version, true);
  return complete;
}

bool CheckpointStore::KnownWhole(const CheckpointInfo& c) const {
  {
    std::lock_guard<std::mutex> lock(whole_->mu);
    if (whole_->versions.count(c.version) > 0) return true;
  }
  const bool whole = Verify(c.path).ok();
  NoteWhole(c.version, whole);
  return whole;
}

void CheckpointStore::NoteWhole(uint64_t version, bool whole) const {
  std::lock_guard<std::mutex> lock(whole_->mu);
  if (whole) {
    whole_->versions.insert(version);
  } else {
    whole_->versions.erase(version);
  }
}

void CheckpointStore::Abandon(uint64_t version) const {
  std::error_code ec;
  fs::remove_all(PartialPath(version), ec);
}

absl::Status CheckpointStore::Prune(int keep) const {
  std::vector<CheckpointInfo> all = List();
  std::error_code ec;
  if (keep > 0) {
    // Only checkpoints that verify count towards `keep`: newer ones that do
    // not are no reason to remove the older whole ones (resume sets them
    // aside), and are left as they are.
    int whole = 0;
    for (const CheckpointInfo& c : all) {
      if (whole < keep) {
        whole += KnownWhole(c);
        continue;
      }
      NoteWhole(c.version, false);
      if (absl::Status s = RemoveCheckpointFolder(dir_, c); !s.ok()) return s;
    }
  }
  if (all.empty()) return absl::OkStatus();
  for (const CheckpointInfo& p : FoldersNamed(dir_, kPartial)) {
    if (p.version >= all.front().version) continue;
    fs::remove_all(p.path, ec);
    if (ec) return FsError("removing a partial checkpoint", p.path, ec);
  }
  return absl::OkStatus();
}

absl::Status CheckpointStore::RemovePartials() const {
  std::error_code ec;
  for (const CheckpointInfo& p : FoldersNamed(dir_, kDeleting)) {
    fs::remove_all(p.path, ec);
    if (ec) return FsError("removing", p.path, ec);
  }
  for (const CheckpointInfo& p : FoldersNamed(dir_, kPartial)) {
    fs::remove_all(p.path, ec);
    if (ec) return FsError("removing a partial checkpoint", p.path, ec);
  }
  return absl::OkStatus();
}

absl::Status CheckpointStore::Reject(const CheckpointInfo& c) const {
  NoteWhole(c.version, false);
  const std::string to = absl::StrCat(dir_, "/", kRejected, c.version);
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::rename(c.path, to, ec);
  if (ec) return FsError("setting aside", c.path, ec);
  // Kept for inspection, but bounded: the newest kKeptRejected only.
  std::vector<CheckpointInfo> rejected =
      NewestFirst(FoldersNamed(dir_, kRejected));
  for (size_t i = kKeptRejected; i < rejected.size(); ++i) {
    fs::remove_all(rejected[i].path, ec);
    if (ec)
      return FsError("removing an old rejected checkpoint", rejected[i].path,
                     ec);
  }
  return absl::OkStatus();
}

absl::Status CheckpointStore::Clear() const {
  {
    std::lock_guard<std::mutex> lock(whole_->mu);
    whole_->versions.clear();
  }
  std::error_code ec;
  for (const char* prefix : {kComplete, kPartial, kDeleting}) {
    for (const CheckpointInfo& c : FoldersNamed(dir_, prefix)) {
      fs::remove_all(c.path, ec);
      if (ec) return FsError("removing", c.path, ec);
    }
  }
  fs::remove(absl::StrCat(dir_, "/", kPublished), ec);
  if (ec) return FsError("removing", dir_ + "/" + kPublished, ec);
  return absl::OkStatus();
}

std::vector<CheckpointInfo> CheckpointStore::List() const {
  std::vector<CheckpointInfo> all;
  for (CheckpointInfo& c : FoldersNamed(dir_, kComplete)) {
    std::error_code ec;
    if (fs::exists(c.path + "/" + kManifest, ec)) all.push_back(std::move(c));
  }
  return NewestFirst(std::move(all));
}

absl::StatusOr<CheckpointInfo> CheckpointStore::NewestValid(
    std::vector<SkippedCheckpoint>* skipped,
    const std::vector<SkippedCheckpoint>& set_aside) const {
  // Folders without a MANIFEST are skipped too (renamed by hand, or a
  // writer that never marked them).
  std::vector<CheckpointInfo> all = NewestFirst(FoldersNamed(dir_, kComplete));
  for (const CheckpointInfo& c : all) {
    auto aside = std::find_if(set_aside.begin(), set_aside.end(),
                              [&](const SkippedCheckpoint& a) {
                                return a.checkpoint.version == c.version;
                              });
    if (aside != set_aside.end()) {
      if (skipped != nullptr) skipped->push_back({c, aside->reason});
      continue;
    }
    const absl::Status s = Verify(c.path);
    if (s.ok()) return c;
    if (skipped != nullptr) skipped->push_back({c, std::string(s.message())});
  }
  return absl::NotFoundError(absl::StrCat(dir_, ": no complete checkpoint"));
}

absl::Status CheckpointStore::RecordPublished(uint64_t version) const {
  const std::string path = absl::StrCat(dir_, "/", kPublished);
  const std::string tmp = path + ".tmp";
  if (absl::Status s = WriteTextFile(tmp, absl::StrCat(version, "\n"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Sync(tmp); !s.ok()) return s;
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return FsError("renaming into place", tmp, ec);
  return Sync(dir_);
}

absl::Status CheckpointStore::Sync(const std::string& path) const {
  if (absl::Status s = SyncPath(path); !s.ok()) return s;
  if (synced_) synced_(path);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> CheckpointStore::PublishedHighWater() const {
  const std::string path = absl::StrCat(dir_, "/", kPublished);
  std::error_code ec;
  if (!fs::exists(path, ec) && !ec) return 0;  // never published
  std::ifstream in(path);
  std::string line;
  uint64_t v = 0;
  if (in && std::getline(in, line) && absl::SimpleAtoi(line, &v)) return v;
  // Read as 0, a restarted learner would publish below what its subscribers
  // hold; a mark that exists but cannot be read is an error.
  return absl::DataLossError(
      absl::StrCat(path, ": the published high-water mark cannot be read (",
                   in ? absl::StrCat("content '", line, "'") : "unreadable",
                   "); restore it, or start afresh with rl.resume=never"));
}

absl::Status CheckpointStore::Verify(const std::string& path) {
  std::ifstream in(absl::StrCat(path, "/", kManifest));
  if (!in) {
    return absl::DataLossError(
        absl::StrCat(path, ": no MANIFEST (never completed)"));
  }
  std::string line;
  uint64_t files = 0, declared = 0;
  bool ended = false;
  while (std::getline(in, line)) {
    if (line.rfind("files ", 0) == 0) {
      ended = absl::SimpleAtoi(line.substr(6), &declared);
      continue;
    }
    if (line.rfind("file ", 0) != 0) continue;
    // "file SIZE HASH NAME" (NAME may hold spaces).
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(' ', 3));
    uint64_t size = 0, hash = 0;
    if (f.size() != 4 || !absl::SimpleAtoi(f[1], &size) ||
        !absl::SimpleAtoi(f[2], &hash)) {
      return absl::DataLossError(
          absl::StrCat(path, ": MANIFEST line unreadable: ", line));
    }
    const std::string file = absl::StrCat(path, "/", f[3]);
    uint64_t got_size = 0;
    absl::StatusOr<uint64_t> got = HashFile(file, &got_size);
    if (!got.ok()) {
      return absl::DataLossError(absl::StrCat(file, ": missing"));
    }
    if (got_size != size) {
      return absl::DataLossError(absl::StrCat(file, ": ", got_size,
                                              " bytes, MANIFEST says ", size,
                                              " (truncated)"));
    }
    if (*got != hash) {
      return absl::DataLossError(
          absl::StrCat(file, ": content does not match MANIFEST (damaged)"));
    }
    ++files;
  }
  if (!ended || declared != files || files == 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": MANIFEST is cut short or names no file"));
  }
  return absl::OkStatus();
}

}  // namespace rlvla3
