// Naming, finding, owning and rotating checkpoints (io/model_files/checkpoint_dir.hpp).
#include "io/model_files/checkpoint_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <utility>

#include "io/hdf5/reader.hpp"
#include "plexus/error.hpp"

namespace plexus {
namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kSuffix = ".h5";
constexpr const char* kLockName = ".plexus-lock";
constexpr const char* kRunIdAttr = "run_id";

std::string type_name(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    default: return "not a regular file";
  }
}

// What `p` is when it is not a regular file ("" when it is one); `readable`: a reader that
// follows links finds a regular file.
std::string describe(const fs::path& p, bool& readable) {
  readable = false;
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(p, ec);
  if (ec) return "cannot be examined: " + ec.message();
  if (fs::is_regular_file(own)) {
    readable = true;
    return "";
  }
  if (!fs::is_symlink(own)) return type_name(own.type());
  const fs::file_status target = fs::status(p, ec);
  if (ec == std::errc::too_many_symbolic_link_levels) return "a symbolic link loop";
  if (target.type() == fs::file_type::not_found) return "a dangling symbolic link";
  if (ec) return "a symbolic link that cannot be followed: " + ec.message();
  if (fs::is_regular_file(target)) {
    readable = true;
    return "a symbolic link";
  }
  return "a symbolic link to " + type_name(target.type());
}

// `path` with every symbolic link followed, as far as they lead (the last need not exist).
fs::path follow_links(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) break;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p;
}

// The run identity of `e` ("" for none), or the reason it cannot be read.
std::string id_or_why(const CheckpointEntry& e, bool& ok) {
  ok = false;
  try {
    std::string id = read_run_id_h5(e.path);
    ok = true;
    return id;
  } catch (const InputError& err) {
    return err.what();
  }
}

}  // namespace

std::string checkpoint_path(const std::string& dir, long long done) {
  char name[48];
  std::snprintf(name, sizeof name, "%s%08lld%s", kPrefix, done, kSuffix);
  return (fs::path(dir) / name).string();
}

long long checkpoint_number(const std::string& name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 8 || digits.size() > 10 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

std::vector<std::string> remove_checkpoint_temporaries(const std::string& dir) {
  const std::string marker = ".tmp.";
  const std::string own = std::to_string(::getpid());
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.rfind(marker);
    if (at == std::string::npos || checkpoint_number(name.substr(0, at)) < 0) continue;
    const std::string pid = name.substr(at + marker.size());
    if (pid.empty() || pid.size() > 10 || pid == own ||
        !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::error_code st_ec;
    if (!fs::is_regular_file(fs::symlink_status(it->path(), st_ec)) || st_ec) continue;  // (a link stays)
    if (fs::remove(it->path(), st_ec) && !st_ec) removed.push_back(it->path().string());
  }
  return removed;
}

std::string checkpoint_lock_path(const std::string& dir) { return (fs::path(dir) / kLockName).string(); }

std::string new_run_id() {
  std::random_device rd;  // the kernel's random source
  std::string id;
  for (int k = 0; k < 4; ++k) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(rd()));
    id += part;
  }
  return id;
}

bool is_run_id(const std::string& text) {
  return text.size() == 32 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string read_run_id_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open(MPI_COMM_NULL, /*note_input=*/false);  // looked at, not read: the run may write it again
  if (!r.attr_exists(kRunIdAttr)) return "";
  const std::string id = r.string_attr(kRunIdAttr);
  if (!is_run_id(id)) r.fail("attribute run_id", "is not a run identity (32 hex digits)");
  return id;
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) throw InputError(dir, "no such directory");
  if (ec) throw InputError(dir, "cannot access: " + ec.message());
  if (!fs::is_directory(st)) throw InputError(dir, "is not a directory");
  std::vector<CheckpointEntry> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const long long done = checkpoint_number(it->path().filename().string());
    if (done < 0) continue;
    CheckpointEntry e;
    e.done = done;
    e.path = it->path().string();
    e.odd = describe(it->path(), e.readable);
    found.push_back(std::move(e));
  }
  if (ec) throw InputError(dir, "cannot list: " + ec.message());
  std::sort(found.begin(), found.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.done != b.done ? a.done < b.done : a.path < b.path; });
  return found;
}

void make_checkpoint_dir(const std::string& dir) {
  if (dir.empty()) throw InputError("make_checkpoint_dir(dir)", "is empty");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir, "cannot create the checkpoint directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "is not a directory");
}

std::string newest_checkpoint(const std::string& dir) {
  const auto found = list_checkpoints(dir);
  for (const CheckpointEntry& e : found)
    if (!e.readable)
      throw InputError(e.path, "is named like a checkpoint but is " + e.odd +
                                   "; remove it, or resume from another directory");
  return found.empty() ? std::string() : found.back().path;
}

std::optional<ForeignCheckpoint> find_foreign_checkpoint(const std::string& dir, const std::string& run_id,
                                                         bool accept_unidentified) {
  std::optional<ForeignCheckpoint> first;
  for (const CheckpointEntry& e : list_checkpoints(dir)) {
    std::string why;
    bool another_run = false;
    if (!e.odd.empty()) {
      why = "is " + e.odd;
    } else {
      bool ok = false;
      const std::string id = id_or_why(e, ok);
      if (!ok) why = "cannot be read (" + id + ")";
      else if (id.empty() && !accept_unidentified) why = "is a checkpoint written without a run identity (by an older plexus)";
      else if (!id.empty() && id != run_id) why = "is a checkpoint of another run";
      another_run = ok && !id.empty() && id != run_id;
    }
    if (why.empty()) continue;
    if (first) ++first->more;
    else first = ForeignCheckpoint{e.path, why, another_run, 0};
  }
  return first;
}

std::vector<std::string> remove_old_checkpoints(const std::string& dir, int keep, const std::string& run_id) {
  std::vector<std::string> removed;
  if (keep <= 0 || !is_run_id(run_id)) return removed;
  std::vector<CheckpointEntry> own;
  for (CheckpointEntry& e : list_checkpoints(dir)) {
    if (!e.odd.empty()) continue;  // links, directories, ...: never this run's
    bool ok = false;
    if (id_or_why(e, ok) == run_id && ok) own.push_back(std::move(e));
  }
  for (std::size_t k = 0; k + static_cast<std::size_t>(keep) < own.size(); ++k) {
    std::error_code ec;
    if (fs::remove(own[k].path, ec) && !ec) removed.push_back(own[k].path);  // already gone: fine
  }
  return removed;
}

bool same_directory(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ec;  // one of them missing: compare the names
  return fs::weakly_canonical(fs::absolute(a, ec), ec) == fs::weakly_canonical(fs::absolute(b, ec), ec);
}

bool names_checkpoint_file(const std::string& output, const std::string& dir) {
  if (output.empty() || dir.empty()) return false;
  const fs::path target = follow_links(output);
  const std::string name = target.filename().string();
  if (checkpoint_number(name) < 0 && name != kLockName) return false;
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  return same_directory(parent.string(), dir);
}

}  // namespace plexus
