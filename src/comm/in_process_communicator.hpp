#pragma once
// Ranks as threads of one process: run_in_process(P, body) runs body on P threads, each with the
// communicator of its rank in a group of P. The collectives really move the data between the
// threads (through shared memory) and count their bytes as MpiCommunicator does (the same
// functions: comm/byte_accounting.hpp, comm/nccl_schedule.hpp), so P ranks' real code run in one
// process moves and counts what it would under mpirun. Reductions combine in rank order.
//
// What uses it: the dry run of the distributed prepare (src/plan/prepare_plan.cpp: every rank's
// real prepare, without MPI) and tests of code on ranks that run without mpirun.
//
// A rank whose body throws abandons the group: every collective of the others then throws too,
// so that no thread waits for ever. run_in_process rethrows the lowest rank's own exception
// after every thread ended.
#include <functional>

#include "plexus/comm.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

void run_in_process(int ranks, const std::function<void(Communicator& comm)>& body);

// body on every rank of `dp` replicas of `shape`, each rank a thread with a ProcessGrid whose
// communicators are groups of these threads, split as ProcessGrid::from_mpi splits MPI's (rank
// = d·X·Y·Z + z·X·Y + x·Y + y): a distributed layer's real collectives on any grid in a unit
// test, without mpirun.
void run_in_process_grid(GridShape shape, int dp, const std::function<void(ProcessGrid& grid)>& body);

}  // namespace plexus
