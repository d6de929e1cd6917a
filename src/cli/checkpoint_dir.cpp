// Naming, finding and rotating checkpoints (src/cli/checkpoint_dir.hpp).
#include "src/cli/checkpoint_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::cli {
namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kSuffix = ".h5";

// The epochs or steps done of a checkpoint's file name, -1 for any other name.
long long done_of(const std::string& name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 8 || digits.size() > 10 || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return -1;
  return std::stoll(digits);
}

// The checkpoints of `dir`, oldest first.
std::vector<std::pair<long long, fs::path>> list(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) throw InputError(dir, "no such directory");
  if (ec) throw InputError(dir, "cannot access: " + ec.message());
  if (!fs::is_directory(st)) throw InputError(dir, "is not a directory");
  std::vector<std::pair<long long, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const long long e = done_of(it->path().filename().string());
    if (e >= 0 && it->is_regular_file()) found.emplace_back(e, it->path());
  }
  if (ec) throw InputError(dir, "cannot list: " + ec.message());
  std::sort(found.begin(), found.end());
  return found;
}
}  // namespace

std::string checkpoint_path(const std::string& dir, long long epochs_done) {
  char name[48];
  std::snprintf(name, sizeof name, "%s%08lld%s", kPrefix, epochs_done, kSuffix);
  return (fs::path(dir) / name).string();
}

void make_checkpoint_dir(const std::string& dir) {
  if (dir.empty()) throw InputError("--checkpoint-dir", "is empty");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir, "cannot create the checkpoint directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "is not a directory");
}

std::string newest_checkpoint(const std::string& dir) {
  const auto found = list(dir);
  return found.empty() ? std::string() : found.back().second.string();
}

void remove_old_checkpoints(const std::string& dir, int keep) {
  if (keep <= 0) return;
  const auto found = list(dir);
  for (std::size_t k = 0; k + static_cast<std::size_t>(keep) < found.size(); ++k) {
    std::error_code ec;
    fs::remove(found[k].second, ec);  // already gone (another job's rotation) is fine
  }
}

}  // namespace plexus::cli
