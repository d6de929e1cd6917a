#include "io/hdf5/file_format.hpp"

#include <filesystem>
#include <system_error>

#include "io/hdf5/probe.hpp"
#include "io/hdf5/reader.hpp"

namespace plexus::h5 {

std::string file_format(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";  // nor a FIFO, which would block
  silence_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) return "";
  check_in_child_process(path);  // a crash or hang of libhdf5 is refused here, once
  try {
    Reader r(path);
    r.open(MPI_COMM_NULL, /*note_input=*/false);  // the reader that follows notes it
    return r.attr_exists("format") ? r.string_attr("format") : std::string();
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace plexus::h5
