#pragma once
// A scratch file: bytes a long computation spills to disk and reads back (the passes' exchange,
// comm/spill_buckets.hpp), in a directory the user names (`--scratch DIR`).
// The file is unlinked as soon as it is created, so it has no name: whatever ends the process
// (an error, exit, SIGTERM, even SIGKILL) the system frees its space, and nothing is ever left
// in DIR. Writes and reads are positioned (pwrite/pread); a failure (disk full, I/O error)
// throws InputError naming DIR.
#include <string>

#include "plexus/tensor.hpp"

namespace plexus::comm {

class ScratchFile {
 public:
  explicit ScratchFile(const std::string& dir);  // InputError: DIR missing, not a directory, not writable
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ScratchFile(ScratchFile&& o) noexcept;
  ScratchFile& operator=(ScratchFile&& o) noexcept;  // this file's space freed, o's taken
  ~ScratchFile();

  // Appends `bytes` bytes; returns the offset they start at.
  std::uint64_t append(const void* data, std::size_t bytes);
  // Reads `bytes` bytes at `offset` (all of them written before).
  void read(std::uint64_t offset, void* data, std::size_t bytes) const;
  std::uint64_t size() const { return size_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace plexus::comm
