// `plexus`: train GCNs on large graphs, generate and convert datasets.
//
// Errors caused by input (files, options) print one line `plexus: error: <where>: <what>`
// and exit with code 2; under MPI the failing rank aborts every rank so none hangs, and an
// error every rank meets is printed once (src/cli/abort_job.cpp).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "io/files.hpp"
#include "plexus/error.hpp"
#include "plexus/version.hpp"
#include "src/cli/abort_job.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/same_command_line.hpp"
#include "src/cli/strict_options.hpp"

namespace {

// True when a launcher (mpirun/mpiexec of Open MPI or MPICH, srun) started this process.
// A plain `plexus` run then skips MPI_Init, whose singleton start-up costs ~0.3 s.
bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_STEP_ID", "MPI_LOCALRANKID"})
    if (std::getenv(var)) return true;
  return false;
}

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

[[noreturn]] void fail(int code, const std::string& message) { plexus::cli::abort_job(message, code); }

// CLI11 reports a mistyped subcommand (`plexus gpt trian`) or an option before the subcommand
// (`plexus --frob train`) as "A subcommand is required": name the word instead. Empty when the
// command line names its subcommands.
std::string unknown_subcommand_word(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "plexus";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto subs = at->get_subcommands([&](CLI::App* s) { return s->check_name(word); });
    if (!subs.empty()) {
      at = subs.front();
      path += " " + word;
      continue;
    }
    if (at->get_require_subcommand_min() == 0 || at->get_subcommands([](CLI::App*) { return true; }).empty()) return "";
    if (word == "-h" || word == "--help" || word == "--version") return "";
    return (word.starts_with("-") ? "unknown option '" : "unknown subcommand '") + word + "' of " + path;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (launched_by_mpi()) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    plexus::cli::init_abort_channel();
  }
  plexus::io::guard_inputs();  // one command per process: no output may replace a file it read
  // Before parsing: a rank with other options could fail to parse, or call other collectives.
  try {
    plexus::cli::require_same_command_line(argc, argv);
  } catch (const plexus::InputError& e) {
    fail(2, e.message());
  }

  CLI::App app{"Plexus: 3D-parallel full-graph GNN training", "plexus"};
  app.set_version_flag("--version", std::string("plexus ") + plexus::version() + " (backends: " +
                                        plexus::compiled_backends() + ")");
  app.require_subcommand(1);
  app.fallthrough();
  plexus::cli::add_train_command(app);
  plexus::cli::add_predict_command(app);
  plexus::cli::add_generate_command(app);
  plexus::cli::add_convert_command(app);
  plexus::cli::add_prepare_command(app);
  plexus::cli::add_plan_command(app);
  plexus::cli::add_inspect_command(app);
  plexus::cli::add_gpt_command(app);
  plexus::cli::read_options_strictly(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    const int code = app.exit(e);
    finalize_mpi();
    return code;
  } catch (const CLI::CallForAllHelp& e) {
    const int code = app.exit(e);
    finalize_mpi();
    return code;
  } catch (const CLI::CallForVersion& e) {
    const int code = app.exit(e);
    finalize_mpi();
    return code;
  } catch (const CLI::ParseError& e) {
    const std::string word = unknown_subcommand_word(app, argc, argv);
    fail(2, std::string("command line: ") + (word.empty() ? e.what() : word) + " (see plexus --help)");
  } catch (const plexus::InputError& e) {
    fail(2, e.message());
  } catch (const std::bad_alloc&) {
    fail(1, "out of memory");
  } catch (const std::exception& e) {
    fail(1, std::string("internal: ") + e.what());
  }
  finalize_mpi();
  return plexus::cli::exit_status();
}
