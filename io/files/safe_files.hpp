#pragma once
// Files the engine reads and writes, kept safe (docs/format-v1.md, "Writing outputs").
//
// Every file the engine writes goes through here:
//  - checked before the work that produces it (check_output): its directory exists and is
//    writable, the name with its temporary suffix fits, it is not a directory, and it is not
//    the same file (device and inode) as an input;
//  - a regular (or new) file is written to `<target>.tmp.<pid>` beside it, flushed, and renamed
//    over it (AtomicFile), so an interrupted or failed write leaves the old file as it was. The
//    temporary file is removed on every failure path, SIGINT, SIGTERM and SIGHUP included;
//  - a symbolic link is written through to the file it names (the link stays a link);
//  - a character device or FIFO (/dev/null, /dev/stdout, a pipe) is written directly, never
//    renamed over; formats that need a seekable file (HDF5) refuse them.
#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace plexus::io {

// What the output's format needs of the file it is written to.
enum class OutputNeeds {
  Stream,  // written front to back once (JSON Lines): a device or FIFO will do
  Seekable,  // HDF5: only a regular file
};

// A checked output: where it goes, and for a device or FIFO the descriptor it is written to
// (opened by the check, so a FIFO's reader sees one writer from start to end).
struct OutputTarget {
  std::string path;    // as named by the user (for messages)
  std::string target;  // the file written: `path` with symbolic links followed
  bool stream = false;               // a character device or FIFO: written directly
  std::shared_ptr<int> stream_fd;    // its descriptor (closed when the last copy goes)
  // 1 or 2 when the output is the file behind standard output or error (/dev/stdout, or its
  // path, redirected to a file): stream_fd is then a duplicate of that descriptor, sharing its
  // offset, so that what is printed and what is written follow each other instead of
  // overwriting each other. 0 otherwise.
  int shares_std_fd = 0;
};

// Checks `path` as an output of a command before any work is done; throws
// InputError(path, what) naming the problem. `inputs`: files the command reads (directories and
// names that do not exist are skipped) — the output may be none of them, nor any file an HDF5
// input reads through libhdf5 (external links, external raw data, virtual dataset sources:
// io/hdf5/file_set.hpp).
OutputTarget check_output(const std::string& path, OutputNeeds needs, const std::vector<std::string>& inputs = {});

// 1 or 2 when `path` (links followed) is the same file (device and inode) as this process's
// standard output or error — a terminal, a pipe, or a file the shell redirected them to; else 0.
int same_file_as_standard_stream(const std::string& path);

// Throws InputError(output, ...) when `output` (symbolic links followed) and `input` are the same
// file: the same device and inode. Either not existing is no conflict. `reader`, when given, is
// the input that reads `input` and `how` says how (for the message).
void check_not_same_file(const std::string& output, const std::string& input, const std::string& reader = "",
                         const std::string& how = "");

// Refuses two outputs of one command that name the same file (symbolic links followed, paths
// made absolute; streams such as /dev/null may repeat): the second write would replace the
// first. `outputs`: {option, path} pairs, empty paths skipped. InputError(path, ...).
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Refuses an input that exists but is not a regular file or a directory — a FIFO or device,
// which would block in open() or never end — for a format that needs a regular file (`format`:
// "HDF5", "TOML", ...). Missing files and directories are left to the reader's own messages.
// Formats read in one pass (edge lists, MatrixMarket, text) read FIFOs as streams instead.
void require_regular_input(const std::string& path, const char* format);

// The bytes of a whole input file read in one go (`format` as above): require_regular_input,
// noted as an input, InputError(path, "cannot open file" | "read error").
std::string read_whole_input(const std::string& path, const char* format);

// Records that the process reads `path` (readers call it when they open a file): AtomicFile
// refuses to rename over any recorded input, whatever name it was given by. Only once
// guard_inputs() was called — by the `plexus` tool, whose process runs one command; a library
// user may well read a file and later write it again.
void guard_inputs();
bool inputs_guarded();
void note_input_file(const std::string& path);

// A temporary file `<target>.tmp.<pid>` for an output, removed by the destructor unless
// committed, and by SIGINT/SIGTERM/SIGHUP while it exists (the signal then takes its usual
// course). commit() flushes it to disk and renames it over the target.
class AtomicFile {
 public:
  explicit AtomicFile(const OutputTarget& out);  // creates the temporary file (empty)
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  const std::string& temp_path() const { return temp_; }
  void commit();

 private:
  std::string path_, target_, temp_;
  int slot_ = -1;  // in the signal handler's list of files to remove
  bool committed_ = false;
};

// Files that exist only while the process runs (a lock file, io/files/run_lock.hpp): removed
// by SIGINT, SIGTERM and SIGHUP like temporary files, from remove_on_signal() until
// forget_on_signal(slot). Returns the slot (-1: none free; the file then stays on a signal).
int remove_on_signal(const std::string& path);
void forget_on_signal(int slot);

// Graceful stop, for long runs (plexus train): after enable_graceful_stop(), the first SIGINT
// or SIGTERM is only recorded — stop_signal() returns its number, 0 before — so that the run
// can end its epoch, write a checkpoint and exit cleanly; a second one takes the usual course
// (temporary files removed, the process ends).
void enable_graceful_stop();
int stop_signal();

// Writes `text` to a checked output: atomically to a regular file, directly to a stream.
void write_text_output(const OutputTarget& out, const std::string& text);

// A log written while the work runs (JSON Lines metrics), so that `tail -f` follows it: the
// one output not written beside itself and renamed. The file is created (or emptied) when the
// log opens, and each line is appended with one write, so a reader never sees part of a line.
// Until commit() a failed run removes it, like a temporary file: on an exception (destructor),
// exit 2, SIGINT, SIGTERM and SIGHUP. Streams (FIFOs, /dev/stdout) are written the same way.
class LineLog {
 public:
  explicit LineLog(const OutputTarget& out);
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;
  ~LineLog();
  void append(const std::string& line);  // `line` without its newline; InputError on a full disk
  void commit();                         // the log is whole: keep it
  const std::string& path() const { return path_; }

 private:
  std::string path_, target_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal handler's list of files to remove
  int shares_std_fd_ = 0;  // OutputTarget::shares_std_fd: stdio's buffer is flushed before each line
  bool committed_ = false;
  std::shared_ptr<int> stream_fd_;  // a stream's descriptor, owned by its OutputTarget
};

}  // namespace plexus::io
