#pragma once
// Where libhdf5 looks for the other files an HDF5 file names (private to io/): the external
// raw-data files of a dataset (H5Pset_external) and the source files of a virtual dataset
// (H5Pset_virtual). The rules are libhdf5 1.10's own (H5D__build_file_prefix, H5D__efl_read,
// H5F_prefix_open_file); external links need none of this, since the library tells which file
// it opened for one (file_name_of).
#include <hdf5.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace plexus::h5 {

// The name of the file holding object `obj`, as libhdf5 opened it ("" if unknown).
std::string file_name_of(hid_t obj);

// One piece of a dataset's external raw storage: `bytes` of its data at `offset` in `path`.
struct ExternalPart {
  std::string name;  // as stored in the file
  std::string path;  // where libhdf5 reads it: HDF5_EXTFILE_PREFIX or the access list's prefix
                     // (${ORIGIN} = the dataset's file's folder), else relative to the current folder
  off_t offset = 0;
  hsize_t bytes = 0;  // H5F_UNLIMITED for "to the end of the data"
};

// The external raw-data files of dataset `dset`, in storage order; empty when its data lives
// in the HDF5 file. `ok` is false when the list could not be read (names past PATH_MAX).
std::vector<ExternalPart> external_parts(hid_t dset, bool& ok);

// The names libhdf5 tries, in its order, for the file `name` that a virtual dataset in `vds_file`
// maps from ("." is `vds_file` itself): the name if absolute, then under each HDF5_VDS_PREFIX
// entry, the dataset access list's prefix `prop_prefix` (may be empty), the folder of
// `vds_file`, the current folder, and the folder of `vds_file` with links resolved. The first
// that opens as HDF5 is the one read.
std::vector<std::string> source_file_candidates(const std::string& name, const std::string& vds_file,
                                                const std::string& prop_prefix);

// The virtual dataset prefix of dataset `dset`'s access property list, ${ORIGIN} expanded
// (HDF5_VDS_PREFIX overrides it, as in libhdf5).
std::string virtual_prefix_of(hid_t dset);

}  // namespace plexus::h5
