#include "io/hdf5/probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "io/hdf5/util.hpp"
#include "plexus/error.hpp"

// Present only in sanitizer builds (weak: null otherwise), see run_child.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace plexus::h5 {
namespace {

constexpr int kSanitizerReportExit = 70;  // the child's exit code after a sanitizer report

// The time limit (check_limit_seconds): a floor every file gets — generous, since a check under
// a sanitizer or on a loaded machine is several times slower — plus a second per 64 MiB, up to
// PLEXUS_HDF5_CHECK_SECONDS (default 60).
constexpr int kDefaultLimitSeconds = 60;
constexpr long long kFloorSeconds = 10;
constexpr long long kBytesPerExtraSecond = 64LL << 20;

// ---- the walk, run in the child ------------------------------------------------------------
// Bounds keep a hostile file (link cycles, millions of attributes) from turning the walk
// itself into the hang; reaching one just ends the walk early.
constexpr int kMaxDepth = 16;
constexpr int kMaxObjects = 4096;
constexpr hsize_t kMaxAttributes = 4096;
constexpr std::size_t kMaxAttributeBytes = std::size_t{64} << 20;
constexpr std::size_t kFullReadBytes = std::size_t{8} << 20;  // datasets read whole up to this

struct Walk {
  int objects = 0;
  std::size_t data_budget = std::size_t{64} << 20;
};

// The memory type a reader would ask for: the native form of the file type. Reading with the
// file type itself would skip the conversions (variable-length strings fetched from the
// global heap, for one) where libhdf5 crashes on corrupt files.
Hid memory_type(hid_t file_type) {
  // H5Tget_native_type returns a string type unchanged (still the file's): a variable-length
  // string is read as readers do, into char* (io/hdf5/reader.hpp, string_attr).
  if (H5Tget_class(file_type) == H5T_STRING && H5Tis_variable_str(file_type) > 0) {
    Hid mem = datatype(H5Tcopy(H5T_C_S1));
    if (mem && H5Tset_size(mem.get(), H5T_VARIABLE) >= 0 && H5Tset_cset(mem.get(), H5Tget_cset(file_type)) >= 0) return mem;
  }
  Hid mem = datatype(H5Tget_native_type(file_type, H5T_DIR_ASCEND));
  return mem ? std::move(mem) : datatype(H5Tcopy(file_type));
}

// Frees what variable-length data the library allocated while reading into `buf`.
void reclaim(hid_t mem_type, hid_t mem_space, void* buf) {
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(mem_type, mem_space, H5P_DEFAULT, buf);
#else
  H5Dvlen_reclaim(mem_type, mem_space, H5P_DEFAULT, buf);
#endif
}

// Reads the value whatever its type, converted as a reader would.
void read_attribute(hid_t loc, const char* name) {
  Hid a = attribute(H5Aopen(loc, name, H5P_DEFAULT));
  if (!a) return;
  Hid type = datatype(H5Aget_type(a.get()));
  Hid space = dataspace(H5Aget_space(a.get()));
  if (!type || !space) return;
  Hid mem = memory_type(type.get());
  if (!mem) return;
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  const std::size_t size = H5Tget_size(mem.get());
  if (n < 0 || size == 0 || static_cast<std::size_t>(n) > kMaxAttributeBytes / size) return;
  std::vector<unsigned char> buf(static_cast<std::size_t>(n) * size + 16);
  if (H5Aread(a.get(), mem.get(), buf.data()) >= 0) reclaim(mem.get(), space.get(), buf.data());
}

herr_t on_attribute(hid_t loc, const char* name, const H5A_info_t*, void* count) {
  read_attribute(loc, name);
  return ++*static_cast<hsize_t*>(count) >= kMaxAttributes ? 1 : 0;
}

// Type, dataspace, filters and chunk index; the data, whole when small, else the first and
// the last element (which makes the library look both ends up).
void check_dataset(hid_t d, Walk& walk) {
  Hid type = datatype(H5Dget_type(d));
  Hid space = dataspace(H5Dget_space(d));
  Hid dcpl = plist(H5Dget_create_plist(d));
  if (dcpl) {
    const int nfilters = H5Pget_nfilters(dcpl.get());
    for (int i = 0; i < nfilters && i < 32; ++i) {
      unsigned flags = 0, config = 0;
      std::size_t nvalues = 8;
      unsigned values[8];
      char fname[64];
      H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues, values, sizeof fname, fname, &config);
    }
  }
  if (!type || !space) return;
  H5Dget_storage_size(d);
#if H5_VERSION_GE(1, 10, 5)
  if (dcpl && H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    hsize_t chunks = 0;
    H5Dget_num_chunks(d, space.get(), &chunks);  // walks the whole chunk index
  }
#endif
  // Every class a reader could read (numbers, strings, compounds, arrays), in its native form.
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_REFERENCE || cls == H5T_NO_CLASS) return;
  Hid mem = memory_type(type.get());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (!mem || rank < 0 || rank > 32 || n <= 0) return;
  const std::size_t esize = H5Tget_size(mem.get());
  if (esize == 0 || esize > 4096) return;
  const auto bytes = static_cast<std::size_t>(n) * esize;
  if (static_cast<std::size_t>(n) <= kFullReadBytes / esize && bytes <= walk.data_budget) {
    walk.data_budget -= bytes;
    std::vector<unsigned char> buf(bytes);
    if (H5Dread(d, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) >= 0) reclaim(mem.get(), space.get(), buf.data());
    return;
  }
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank) + 1);
  if (rank == 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) != rank) return;
  std::vector<hsize_t> coords(2 * static_cast<std::size_t>(rank), 0);
  for (int k = 0; k < rank; ++k) coords[static_cast<std::size_t>(rank + k)] = dims[static_cast<std::size_t>(k)] - 1;
  if (H5Sselect_elements(space.get(), H5S_SELECT_SET, 2, coords.data()) < 0) return;
  const hsize_t two = 2;
  Hid memspace = dataspace(H5Screate_simple(1, &two, nullptr));
  std::vector<unsigned char> buf(2 * esize);
  if (memspace && H5Dread(d, mem.get(), memspace.get(), space.get(), H5P_DEFAULT, buf.data()) >= 0)
    reclaim(mem.get(), memspace.get(), buf.data());
}

void check_object(hid_t obj, int depth, Walk& walk) {
  if (++walk.objects > kMaxObjects) return;
  hsize_t count = 0;
  hsize_t idx = 0;
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, on_attribute, &count);
  const H5I_type_t kind = H5Iget_type(obj);
  if (kind == H5I_DATASET) check_dataset(obj, walk);
  if (kind != H5I_GROUP || depth >= kMaxDepth) return;
  H5G_info_t info;
  if (H5Gget_info(obj, &info) < 0) return;
  // Links by index rather than H5Literate, whose callback type differs between 1.10 and 1.12;
  // soft and external links are followed, as a reader's H5Dopen would.
  for (hsize_t i = 0; i < info.nlinks && walk.objects <= kMaxObjects; ++i) {
    char name[1024];
    const ssize_t len = H5Lget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, name, sizeof name, H5P_DEFAULT);
    if (len <= 0 || static_cast<std::size_t>(len) >= sizeof name) continue;
    const hid_t child = H5Oopen(obj, name, H5P_DEFAULT);
    if (child < 0) continue;
    check_object(child, depth + 1, walk);
    H5Oclose(child);
  }
}

[[noreturn]] void run_child(const std::string& path, int limit_seconds) {
  // The parent's handlers must not run here: a fuzzer's or sanitizer's crash handler would
  // report the parent's input, and SIGINT/TERM/HUP handlers remove the parent's temporaries.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP, SIGINT, SIGTERM, SIGHUP, SIGALRM})
    std::signal(sig, SIG_DFL);
  // Under a sanitizer, a memory error inside libhdf5 is reported in the child and ends it; the
  // death callback a fuzzer installed would save the parent's input as its own crash.
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback([] { _exit(kSanitizerReportExit); });
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a killed parent
  alarm(static_cast<unsigned>(limit_seconds) + 5);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
  }
  silence_errors();
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) {
    // The walk starts at the root group (a file id is not a group: H5Iget_type says H5I_FILE).
    const hid_t root = H5Oopen(file, "/", H5P_DEFAULT);
    if (root >= 0) {
      Walk walk;
      check_object(root, 0, walk);
      H5Oclose(root);
    }
    H5Fclose(file);
  }
  _exit(0);  // no atexit handlers, no MPI, no flushing of the parent's streams
}

// PLEXUS_HDF5_CHECK_SECONDS: unset is the default; anything else must be digits only (no
// sign, no blank, not empty) naming a number in [0, 86400].
int limit_setting() {
  const char* env = std::getenv("PLEXUS_HDF5_CHECK_SECONDS");
  if (env == nullptr) return kDefaultLimitSeconds;
  const std::string text = env;
  const bool digits = !text.empty() && text.size() <= 18 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  const long long v = digits ? std::stoll(text) : -1;
  if (v < 0 || v > 86400)
    throw InputError("PLEXUS_HDF5_CHECK_SECONDS", "'" + (text.size() > 24 ? text.substr(0, 24) + "..." : text) +
                                                      "' is not a whole number of seconds in [0, 86400]");
  return static_cast<int>(v);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

int check_limit_seconds(int setting, long long file_bytes) {
  if (setting <= 0) return setting;
  const long long scaled = kFloorSeconds + std::max(file_bytes, 0LL) / kBytesPerExtraSecond;
  return static_cast<int>(std::min<long long>(setting, scaled));
}

void check_in_child_process(const std::string& path) {
  const int setting = limit_setting();
  if (setting == 0) return;
  struct stat st {};
  const int limit = check_limit_seconds(setting, ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0);
  // The child holds the pipe's write end: end of file on the read end means it has exited,
  // whichever way, which poll() can wait for with a time limit.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw InputError(path, std::string("cannot start the HDF5 check process: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw InputError(path, std::string("cannot start the HDF5 check process: ") + std::strerror(err) +
                               " (PLEXUS_HDF5_CHECK_SECONDS=0 skips the check)");
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(path, limit);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit);
  bool exited = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      char byte;
      if (::read(fds[0], &byte, 1) <= 0) {  // end of file (the child never writes)
        exited = true;
        break;
      }
      continue;
    }
    if (r == 0) break;
  }
  ::close(fds[0]);
  if (!exited) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!exited)
    throw InputError(path, "corrupt HDF5 file: libhdf5 did not finish reading its metadata within " +
                               std::to_string(limit) + " s (" +
                               (limit < setting ? "the limit for a file of its size; " : "") +
                               "PLEXUS_HDF5_CHECK_SECONDS caps it)");
  if (WIFSIGNALED(status))
    throw InputError(path, "corrupt HDF5 file: libhdf5 crashed (" + signal_name(WTERMSIG(status)) +
                               ") reading it in a check process");
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSanitizerReportExit)
    throw InputError(path, "corrupt HDF5 file: the sanitizer caught a memory error in libhdf5 reading it in a check process");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError(path, "corrupt HDF5 file: libhdf5 failed reading it in a check process (exit " +
                               std::to_string(WEXITSTATUS(status)) + ")");
}

}  // namespace plexus::h5
