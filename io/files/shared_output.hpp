#pragma once
// Outputs every rank of a job writes together (checkpoints, --save-model, predict -o): the file
// rank 0 creates must be the file every other rank opens.
//
// Ranks started in different working directories resolve a relative name to different files,
// and nodes that do not share the output's directory see none at all. Either way one rank's
// collective open would fail or create another file while the others wait in the collective
// for ever. So rank 0 resolves the name to an absolute path every rank writes through, writes a
// token into the file, and every rank reads the token back by that path before any collective
// I/O; a rank that cannot ends every rank with one line naming the output.
#include <string>

#include "plexus/comm.hpp"

namespace plexus::io {

// Rank 0 has written `token` to `file` (an absolute path every rank was given); every rank of
// `comm` checks that it reads exactly that. Collective. On any rank's failure throws
// InputError(shown, ...) on every rank, naming the failing rank and its reason. One rank:
// nothing to check.
void check_every_rank_reaches(const std::string& shown, const std::string& file, const std::string& token,
                              Communicator& comm);

// A probe before the work that writes `path` collectively: rank 0 creates a temporary file beside
// `path` (removed again), and every rank must reach it. Collective; InputError(path, ...) on every
// rank otherwise.
void check_shared_output(const std::string& path, Communicator& comm);

// Rank 0's absolute form of `path` (as given on every other rank), for every rank to write through.
std::string absolute_on_rank0(const std::string& path, Communicator& comm);

// A token no other run writes: the host, the process and random bits.
std::string unique_token();

}  // namespace plexus::io
