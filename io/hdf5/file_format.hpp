#pragma once
// What kind of Plexus file an HDF5 file is, by its root attribute `format` ("plexus-graph",
// "plexus-gcn", "plexus-gpt", "plexus-predictions"), so that a command given a file of another
// kind (a GPT model to `plexus predict`, a GNN model to `plexus gpt sample`) can say so in its
// own words before a reader refuses the attribute. No libhdf5 header: the commands include it.
#include <string>

namespace plexus::h5 {

// The root attribute `format` of the HDF5 file `path` (opened read-only); "" when there is
// none, when it is not a string, or when the file cannot be read at all (missing, not a
// regular file, not HDF5): the reader of the kind expected then refuses it with its own
// message. Throws only the InputError of the check process (io/hdf5/probe.hpp) for a file
// that libhdf5 cannot read safely, as every reader would.
std::string file_format(const std::string& path);

}  // namespace plexus::h5
