#pragma once
// The first contact with an untrusted HDF5 file happens in a child process (private to io/).
//
// Why: Debian 12's libhdf5 (1.10.8) segfaults or spins forever on some corrupt files, inside
// H5Fopen/H5Aread/H5Dread, where no error code can reach us (docs/hardening.md has the
// measurements). So before a reader opens a file for real, a forked child opens it and walks
// everything a reader could touch: every object reachable by a link, every attribute read,
// every dataset's type, dataspace, filters and chunk index, and the data itself for small
// datasets (first and last element of large ones). The parent waits with a time limit. A
// child killed by a signal, exiting abnormally or running past the limit means the library
// cannot read this file safely: an InputError naming the file (exit 2) instead of a crash
// or a hang of the whole (possibly MPI) job. Every open is checked (a few milliseconds for
// a small file; large datasets cost two elements each): a cache keyed by inode and mtime
// would miss a file rewritten in place within one timestamp tick.
//
// The time limit grows with the file: 10 s plus 1 s per 64 MiB, capped by
// PLEXUS_HDF5_CHECK_SECONDS (default 60; digits only, 0 to 86400). A small file that hangs
// libhdf5 is refused in 10 s, not 60; the floor leaves room for a slow (sanitizer, loaded)
// machine. 0 turns the check off, for files from a trusted source on a job where a fork per
// rank is unwanted.
#include <string>

namespace plexus::h5 {

// Throws InputError(path, ...) if libhdf5 crashes or hangs reading `path`'s metadata in a
// child process; returns normally otherwise (also when the child merely found the file
// unreadable: the real open reports that with its own message).
void check_in_child_process(const std::string& path);

// The check's limit in seconds for a file of `file_bytes` under the setting
// PLEXUS_HDF5_CHECK_SECONDS = `setting` (0: no check).
int check_limit_seconds(int setting, long long file_bytes);

}  // namespace plexus::h5
