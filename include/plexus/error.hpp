#pragma once
// Errors the engine reports to users. Anything caused by bad input (a file, an option)
// is an InputError: the CLI prints it as one line `plexus: error: <where>: <what>` and
// exits with code 2. Everything else is a bug or a system failure (exit 1).
//
// The library names what its user set, never a command-line option: a field of an options
// struct as Struct.field ("TrainConfig.class_weights", "GptConfig.heads", "SbmOptions.nodes"), a
// GNN kind's option as GnnSpec.<option> ("GnnSpec.heads", "GnnSpec.attn-dropout"; the kind
// itself GnnSpec.kind), a parsed value by its type ("GridShape" for parse_grid's text), and a
// plain argument as function(argument) ("grid_ranks(dp)", "sample_gpt(temperature)") — in
// `where` and in the text alike ("must be a multiple of GnnSpec.heads"). The CLI prints each
// name as the option that sets it ("--class-weights: ..."; src/cli/option_names.cpp).
#include <stdexcept>
#include <string>

namespace plexus {

class InputError : public std::runtime_error {
 public:
  // `where` names the file (or field, e.g. "TrainConfig.lr") the problem is in.
  InputError(std::string where, const std::string& what)
      : std::runtime_error(what), where_(std::move(where)) {}
  const std::string& where() const noexcept { return where_; }
  // The one-line message the CLI prints after "plexus: error: ".
  std::string message() const { return where_ + ": " + what(); }

 private:
  std::string where_;
};

// The library never aborts the job or exits on an error: it throws. Some errors leave state
// that must not be torn down normally: libhdf5 1.10 segfaults in its exit-time cleanup
// (atexit, or MPI_Finalize under parallel HDF5) once an H5Fclose has failed, e.g. on a full
// disk; and a file read collectively (MPI-IO) is left open when some ranks failed, because
// closing it would wait for the others. The HDF5 code then marks the process, and a program
// that ends after catching the error should check teardown_is_unsafe() and, when it is true,
// end with std::_Exit (or MPI_Abort) rather than exit() or MPI_Finalize.
void mark_unsafe_teardown() noexcept;
bool teardown_is_unsafe() noexcept;

}  // namespace plexus
