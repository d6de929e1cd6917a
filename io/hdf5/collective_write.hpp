#pragma once
// One HDF5 file written by every rank of a communicator at once (private to io/): checkpoints
// and predictions, where each rank writes its own shards and nothing is gathered to one rank.
//
// Rank 0 checks the output and creates the temporary file (io::AtomicFile); every rank checks
// that it reaches that very file by rank 0's absolute path (io/files/shared_output.hpp: ranks in
// other working directories or on nodes without the directory would otherwise wait for each other
// for ever) and opens it through MPI-IO, makes the same metadata calls and writes its blocks (h5::Writer's
// block_dataset); the file is closed collectively, and rank 0 flushes it and renames it over
// the target only when every rank succeeded. A failure on any rank throws InputError on every
// rank — the failing rank's message there, "rank K could not write" elsewhere — and leaves the
// target as it was. The ranks are a Communicator's: its agreements and broadcasts go through it,
// and HDF5 gets its mpi_comm() for the MPI-IO open (none with one rank: an ordinary
// single-process write).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "io/files/shared_output.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus::h5 {

namespace detail {
// The probe every rank reads back before the collective open (io/files/shared_output.hpp).
inline void write_token(const std::string& file, const std::string& token) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  const bool ok = f != nullptr && std::fwrite(token.data(), 1, token.size(), f) == token.size();
  if ((f != nullptr && std::fclose(f) != 0) || !ok) throw std::runtime_error("cannot write " + file);
}

// Reserves `bytes` (plus room for the metadata) of disk for `file` (fallocate: the file grows to
// that size; HDF5 truncates it to its end when it closes it), so that later writes within them
// cannot meet a full disk. Where the file system cannot reserve, nothing is reserved.
inline void reserve_disk(const std::string& file, double bytes) {
  const auto want = static_cast<off_t>(bytes * 1.01) + (off_t{1} << 20);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot reopen " + file + ": " + std::strerror(errno));
  const int rc = ::fallocate(fd, 0, 0, want);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  if (err == 0 || err == EOPNOTSUPP || err == ENOSYS || err == EINTR) return;
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(want) / 1e6);
  throw std::runtime_error(std::string("no room on the disk for the ") + size + " file: " + std::strerror(err));
}

}  // namespace detail

// `body(writer)` writes the file's contents; every rank calls this with the same path. Then
// `serial_tail(writer)` runs on rank 0 alone on the closed file reopened serially, for what
// MPI-IO cannot write (variable-length strings), before the file is committed.
template <class Body, class Tail>
void write_collectively(const std::string& path, Communicator& comm, Body&& body, Tail&& serial_tail) {
  h5::silence_errors();
  const comm::Ranks ranks(comm);
  const int rank = ranks.rank;
  std::string why;
  const auto attempt = [&](auto&& step) {
    try {
      step();
      return false;
    } catch (const LocalWriteError&) {
      throw;  // the other ranks are in a collective call this rank will not make: end the job now
    } catch (const std::exception& e) {
      why = e.what();
      return true;
    }
  };
  const auto agree = [&](bool failed) {
    const int bad = ranks.first_failed(failed);
    if (bad < 0) return;
    if (bad == rank && !why.empty()) throw InputError(path, why.rfind(path + ": ", 0) == 0 ? why.substr(path.size() + 2) : why);
    throw InputError(path, "cannot write: rank " + std::to_string(bad) + " failed");
  };

  std::optional<io::AtomicFile> file;  // rank 0's; declared before the writer, which closes first
  std::string temp, token;  // rank 0's temporary file by its absolute path, and what it wrote there
  agree(rank == 0 && attempt([&] {
          file.emplace(io::check_output(path, io::OutputNeeds::Seekable));
          temp = std::filesystem::absolute(file->temp_path()).string();
          token = io::unique_token();
          detail::write_token(temp, token);
        }));
  temp = ranks.broadcast(temp, 0);
  // Every rank opens that very file (H5Fcreate truncates the token away), or none does.
  io::check_every_rank_reaches(path, temp, ranks.broadcast(token, 0), comm);
  // The file's data, sized by running the body through a writer that writes nothing: rank 0
  // reserves that much disk for it before any rank writes, so a disk too small fails here, on
  // every rank alike, and not half-way through collective writes (where HDF5 cannot fail one
  // rank without leaving the others waiting).
  double bytes = 0;
  agree(attempt([&] {
    Writer sizer(path);
    sizer.size_only();
    body(sizer);
    bytes = sizer.bytes();
  }));
  {
    Writer w(path);
    agree(attempt([&] { w.create(temp, comm.mpi_comm()); }));
    agree(rank == 0 && attempt([&] { detail::reserve_disk(temp, bytes); }));
    // From here on every rank is inside collective HDF5 calls: a failing collective fails on
    // every rank, and they agree below. A data write that fails on one rank only (its disk
    // full) is a LocalWriteError: the others already wait in the next collective call, so it
    // ends the job at once (the CLI aborts every rank; rank 0's temporary file goes with its
    // SIGTERM handler, or with its destructor when rank 0 is the one that failed).
    agree(attempt([&] {
      body(w);
      w.close();
    }));
  }
  agree(rank == 0 && attempt([&] {
          Writer w(path);
          w.open_existing(temp);
          serial_tail(w);
          w.close();
        }));
  agree(rank == 0 && attempt([&] { file->commit(); }));
}

template <class Body>
void write_collectively(const std::string& path, Communicator& comm, Body&& body) {
  write_collectively(path, comm, std::forward<Body>(body), [](Writer&) {});
}

}  // namespace plexus::h5
