#pragma once
// Under MPI every rank must run the same command: ranks started with different options (a
// launcher script gone wrong, an MPMD line) would train different models, or wait forever in
// collectives the others never call.
namespace plexus::cli {

// Compares a hash of argv[1..] over all ranks (one all-gather on MPI_COMM_WORLD, before any
// other collective); throws InputError("command line", ...) on every rank when they differ.
// Nothing without MPI or on one rank.
void require_same_command_line(int argc, char** argv);

}  // namespace plexus::cli
