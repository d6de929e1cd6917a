#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plexus/error.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

std::string default_dataset() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("PLEXUS_DATA_DIR")) candidates.emplace_back(fs::path(env) / "cora.h5");
  candidates.emplace_back(fs::path(PLEXUS_DATA_DIR) / "cora.h5");
  candidates.emplace_back(fs::path(PLEXUS_INSTALL_DATA_DIR) / "cora.h5");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.emplace_back(exe.parent_path().parent_path() / "share" / "plexus" / "cora.h5");
  for (const auto& p : candidates)
    if (fs::exists(p, ec)) return p.string();
  throw InputError("cora.h5", "bundled dataset not found (set PLEXUS_DATA_DIR or pass --data)");
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

double current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0.0;
  return pages_resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "cannot open for writing");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(path, "write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "cannot rename the temporary file into place");
  }
}

}  // namespace plexus::cli
