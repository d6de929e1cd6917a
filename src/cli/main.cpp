// `plexus`: train GCNs on large graphs, generate and convert datasets.
//
// Errors caused by input (files, options) print one line `plexus: error: <where>: <what>`
// (the library's names of what its user set, printed as the options that set them:
// src/cli/option_names.hpp) and exit with code 2; under MPI the failing rank aborts every rank
// so none hangs, and an error every rank meets is printed once (src/cli/abort_job.cpp).
#include <mpi.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "plexus/version.hpp"
#include "src/cli/abort_job.hpp"
#include "src/cli/command_line_help.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/option_names.hpp"
#include "src/cli/same_command_line.hpp"
#include "src/cli/strict_options.hpp"

namespace {

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

[[noreturn]] void fail(int code, const std::string& message) { plexus::cli::abort_job(message, code); }

// Colour only for a person at a terminal: not into files, pipes, or from the ranks of an MPI
// launcher (whose output Open MPI passes through a pseudo-terminal even when mpirun's goes to a
// file). NO_COLOR (no-color.org) turns it off too.
void set_up_logging() {
  const char* term = std::getenv("TERM");
  const bool colour = ::isatty(STDOUT_FILENO) && !plexus::cli::launched_by_mpi() && !std::getenv("NO_COLOR") &&
                      !(term && std::string(term) == "dumb");
  auto sink = std::make_shared<spdlog::sinks::stdout_color_sink_mt>(colour ? spdlog::color_mode::automatic
                                                                           : spdlog::color_mode::never);
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("", std::move(sink)));
}

// OpenBLAS's kernels for this CPU where it fell back to older ones (plexus/version.hpp): it
// reads OPENBLAS_CORETYPE only when it loads, so the program starts again with it set. Before
// MPI_Init: a rank may replace itself only then. Should the exec fail, the run goes on as it was.
void run_the_cpus_blas_kernels(char** argv) {
  const std::string core = plexus::cpu_blas_better_coretype();
  if (core.empty()) return;
  if (::setenv(plexus::kOpenblasOwnCoreVariable, plexus::cpu_blas_core().c_str(), 1) != 0 ||
      ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0)
    return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(plexus::kOpenblasOwnCoreVariable);
}

}  // namespace

int main(int argc, char** argv) {
  run_the_cpus_blas_kernels(argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is printed, into files and pipes too
  set_up_logging();
  if (plexus::cli::launched_by_mpi()) {
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
  app.set_version_flag("--version", [] {
    return std::string("plexus ") + plexus::version() + " (backends: " + plexus::compiled_backends() +
           ")\nCPU GEMM: " + plexus::cpu_blas_kernels();
  });
  app.require_subcommand(1);
  app.fallthrough();
  app.footer("Each subcommand documents its own options: plexus SUBCOMMAND --help (e.g. plexus train --help).");
  app.add_option_function<std::string>(
         "--log-level", [](const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); },
         "Messages shown: debug, info (default), warn (progress and notes off), error, off; given before or after "
         "the subcommand")
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
  plexus::cli::add_train_command(app);
  plexus::cli::add_predict_command(app);
  plexus::cli::add_generate_command(app);
  plexus::cli::add_convert_command(app);
  plexus::cli::add_prepare_command(app);
  plexus::cli::add_plan_command(app);
  plexus::cli::add_inspect_command(app);
  plexus::cli::add_gpt_command(app);
  plexus::cli::add_report_command(app);
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
    fail(2, "command line: " + plexus::cli::explain_parse_error(app, argc, argv, e));
  } catch (const plexus::InputError& e) {
    fail(2, plexus::cli::cli_message(e));  // the library's names as this program's options
  } catch (const std::bad_alloc&) {
    fail(1, "out of memory");
  } catch (const std::exception& e) {
    fail(1, std::string("internal: ") + e.what());
  }
  finalize_mpi();
  return plexus::cli::exit_status();
}
