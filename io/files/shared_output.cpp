// Outputs every rank writes together reach one file (io/files/shared_output.hpp).
#include "io/files/shared_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus::io {

namespace {

// "" when `file` holds exactly `token`, else what is wrong.
std::string read_back(const std::string& file, const std::string& token) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open " + file + ": " + std::strerror(errno);
  std::string got(token.size() + 1, '\0');
  std::size_t have = 0;
  while (have < got.size()) {
    const ssize_t r = ::read(fd, got.data() + have, got.size() - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += static_cast<std::size_t>(r);
  }
  ::close(fd);
  got.resize(have);
  return got == token ? std::string() : "finds another file at " + file + " than the one rank 0 wrote";
}

}  // namespace

std::string unique_token() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  return "plexus output probe: host " + std::string(host) + " pid " + std::to_string(::getpid()) + " " +
         std::to_string(rd()) + std::to_string(rd()) + "\n";
}

std::string absolute_on_rank0(const std::string& path, Communicator& comm) {
  std::string abs;
  if (comm.rank() == 0) {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(path, ec);
    abs = ec ? path : p.string();
  }
  return comm::Ranks(comm).broadcast(abs, 0);
}

void check_every_rank_reaches(const std::string& shown, const std::string& file, const std::string& token,
                              Communicator& comm) {
  if (comm.size() == 1) return;
  const comm::Ranks ranks(comm);
  const std::string why = ranks.rank == 0 ? std::string() : read_back(file, token);
  const int bad = ranks.first_failed(!why.empty());
  if (bad < 0) return;
  const std::string reason = ranks.broadcast(why, bad);
  throw InputError(shown, "rank " + std::to_string(bad) + " " + reason +
                              " (is its directory on a file system every node shares? name an output every rank "
                              "reaches)");
}

void check_shared_output(const std::string& path, Communicator& comm) {
  if (comm.size() == 1) return;
  const comm::Ranks ranks(comm);
  const std::string abs = absolute_on_rank0(path, comm);
  std::string token, why, probe;
  std::optional<AtomicFile> file;  // rank 0's probe, removed when this returns or throws
  if (ranks.rank == 0) {
    try {
      file.emplace(OutputTarget{path, abs + ".probe", false, {}});
      probe = file->temp_path();
      token = unique_token();
      const int fd = ::open(probe.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      const bool ok = fd >= 0 && ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
      if (fd >= 0 && ::close(fd) != 0) why = "cannot write " + probe;
      if (!ok) why = "cannot write " + probe;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  const int bad = ranks.first_failed(!why.empty());
  if (bad >= 0) {
    const std::string reason = ranks.broadcast(why, bad);
    throw InputError(path, reason.rfind(path + ": ", 0) == 0 ? reason.substr(path.size() + 2) : reason);
  }
  probe = ranks.broadcast(probe, 0);
  token = ranks.broadcast(token, 0);
  check_every_rank_reaches(path, probe, token, comm);
}

}  // namespace plexus::io
