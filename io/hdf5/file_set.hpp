#pragma once
// Every file an HDF5 input reads (private to io/). An HDF5 file can read others through
// libhdf5: an external link's target file, the external raw-data files of a dataset, a virtual
// dataset's source files (and what those reach in turn). An output replacing any of them
// destroys the input as surely as one replacing the named file, so the same-file checks of
// io/files/safe_files.hpp compare outputs with this whole set.
#include <hdf5.h>

#include <string>
#include <vector>

namespace plexus::h5 {

// A file an input reads, and how ("external raw data of /features", ...).
struct ReachedFile {
  std::string path;  // as libhdf5 opens it (relative to the current folder, or absolute)
  std::string how;
};

// The files other than itself that the open file `file` reads through libhdf5: a walk of every
// object reachable by a link (soft and external links followed; depth <= 16, <= 4,096 objects,
// as the check process), collecting the file each object lives in, each dataset's external
// raw-data files and each virtual dataset's source files — every name libhdf5 would try for a
// source that exists, since only opening decides which one it reads. Never throws.
std::vector<ReachedFile> files_read_through(hid_t file);

// The same for the file at `path`: {} when it does not exist or is not HDF5; the file is read
// in the check process first (io/hdf5/probe.hpp: InputError when libhdf5 cannot read it
// safely), and files it cannot open (locked, unreadable) reach nothing here, as their reader
// then refuses them with its own message.
std::vector<ReachedFile> files_read_through(const std::string& path);

}  // namespace plexus::h5
