#pragma once
// Missing data is never read as zeros (private to io/). libhdf5 answers a read of storage that
// was never written with the dataset's fill value — zeros unless one was set — and success:
// chunks a converter killed halfway never wrote, a chunk index that lost entries, a contiguous
// dataset created but never written, an external raw-data file shorter than declared, a virtual
// dataset whose source file is missing or whose mappings leave elements out. Before any read,
// the storage a dataset actually has is compared with what its extent needs; zeros are data
// only where they were written.
#include <hdf5.h>

#include <string>

namespace plexus::h5 {

// Why reading dataset `dset` would return values nobody wrote (one phrase for a message,
// e.g. "3 of 8 chunks were never written (a conversion stopped halfway?)"), or "" when every
// element its extent declares is backed by storage:
//   compact          always (the data is in the object header);
//   contiguous       allocated; with external raw data, every file present, a regular file,
//                    and long enough for its part (offset + bytes);
//   chunked          as many chunks allocated as the extent needs (H5Dget_num_chunks), and
//                    each found at its offset (H5Dget_chunk_storage_size): an index entry
//                    whose key was damaged counts, but reads as fill values;
//   virtual          every element mapped, every source file found (libhdf5's search order;
//                    checked in a child process first, like any input), every source dataset
//                    present, its selection inside its extent, and its own storage complete
//                    (this check, to a depth of 4 virtual datasets).
// Also a header declaring more elements than the stored bytes could hold (more than 1100
// bytes per stored byte: beyond deflate's best ratio) is refused before anything is allocated.
std::string unwritten_data(hid_t dset);

}  // namespace plexus::h5
