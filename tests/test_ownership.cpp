// What a run owns, and nothing else (docs/checkpoints.md "Whose checkpoints", docs/hardening.md):
//  - checkpoint directories: names, run identities, the odd entries named like checkpoints (link
//    loops, dangling links, directories) described instead of thrown from std::filesystem, the
//    foreign-checkpoint check, rotation that removes only the run's own checkpoints, and the
//    outputs that would name a checkpoint (io/model_files/checkpoint_dir.hpp);
//  - the advisory lock on a run's outputs (io/files/run_lock.hpp): a second holder is refused
//    with the first's pid and host, the lock file goes when the holder lets go, a holder that
//    dies leaves no stale lock;
//  - an output that is the file behind standard output: written through that descriptor, at
//    its offset, never emptied (io/files/safe_files.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/files/run_lock.hpp"
#include "io/files/safe_files.hpp"
#include "io/model_files/checkpoint_dir.hpp"
#include "io/model_files/gnn_model_file.hpp"
#include "plexus/error.hpp"
#include "checkpoint_fixture.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

const std::string kRunA = "0123456789abcdef0123456789abcdef";
const std::string kRunB = "fedcba9876543210fedcba9876543210";

using testing::write_checkpoint;

std::string name_of(const std::string& path) { return fs::path(path).filename().string(); }

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// ---- names and identities ------------------------------------------------------------------

TEST(CheckpointNames, NumberOfAName) {
  EXPECT_EQ(checkpoint_number("checkpoint-00000012.h5"), 12);
  EXPECT_EQ(checkpoint_number("checkpoint-1234567890.h5"), 1234567890);
  EXPECT_EQ(checkpoint_number("checkpoint-0000012.h5"), -1);  // 7 digits
  EXPECT_EQ(checkpoint_number("checkpoint-00000012.h5.tmp.77"), -1);
  EXPECT_EQ(checkpoint_number("checkpoint-0000001x.h5"), -1);
  EXPECT_EQ(checkpoint_number("metrics.jsonl"), -1);
  EXPECT_EQ(name_of(checkpoint_path("d", 7)), "checkpoint-00000007.h5");
}

TEST(RunIdentity, FreshOnesAreDistinctRunIds) {
  const std::string a = new_run_id(), b = new_run_id();
  EXPECT_TRUE(is_run_id(a)) << a;
  EXPECT_TRUE(is_run_id(b)) << b;
  EXPECT_NE(a, b);
  EXPECT_FALSE(is_run_id(""));
  EXPECT_FALSE(is_run_id(kRunA.substr(1)));
  EXPECT_FALSE(is_run_id("0123456789ABCDEF0123456789ABCDEF"));
}

TEST(RunIdentity, ReadFromTheFileThatCarriesIt) {
  ScratchDir d;
  EXPECT_EQ(read_run_id_h5(write_checkpoint(d.file("a.h5"), kRunA)), kRunA);
  EXPECT_EQ(read_run_id_h5(write_checkpoint(d.file("old.h5"), "")), "");  // before run identities
  EXPECT_THROW(read_run_id_h5(d.write("text.h5", "not HDF5")), InputError);
  EXPECT_THROW(read_run_id_h5(d.file("missing.h5")), InputError);
}

// ---- odd entries named like checkpoints ------------------------------------------------------

TEST(CheckpointDir, OddEntriesAreDescribedNotThrown) {
  ScratchDir d;
  const fs::path dir = d.path();
  write_checkpoint(d.file("checkpoint-00000002.h5"), kRunA, 2);
  fs::create_symlink("checkpoint-00000001.h5", dir / "checkpoint-00000001.h5");  // a loop
  fs::create_symlink("nowhere.h5", dir / "checkpoint-00000003.h5");             // dangling
  fs::create_directory(dir / "checkpoint-00000004.h5");
  fs::create_symlink("checkpoint-00000002.h5", dir / "checkpoint-00000005.h5");  // to a checkpoint
  const std::vector<CheckpointEntry> found = list_checkpoints(dir.string());
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0].odd, "a symbolic link loop");
  EXPECT_EQ(found[1].odd, "");
  EXPECT_TRUE(found[1].readable);
  EXPECT_EQ(found[2].odd, "a dangling symbolic link");
  EXPECT_EQ(found[3].odd, "a directory");
  EXPECT_EQ(found[4].odd, "a symbolic link");
  EXPECT_TRUE(found[4].readable);
  try {
    newest_checkpoint(dir.string());
    FAIL() << "a link loop named like a checkpoint was resumed from";
  } catch (const InputError& e) {
    EXPECT_EQ(name_of(e.where()), "checkpoint-00000001.h5");
    EXPECT_EQ(std::string(e.what()).rfind("is named like a checkpoint but is a symbolic link loop", 0), 0u) << e.what();
  }
}

TEST(CheckpointDir, NewestFollowsALinkToACheckpoint) {
  ScratchDir d;
  write_checkpoint(d.file("checkpoint-00000002.h5"), kRunA, 2);
  fs::create_symlink("checkpoint-00000002.h5", d.path() / "checkpoint-00000005.h5");
  EXPECT_EQ(name_of(newest_checkpoint(d.path().string())), "checkpoint-00000005.h5");
  EXPECT_THROW(newest_checkpoint(d.file("none")), InputError);
}

// ---- foreign checkpoints ----------------------------------------------------------------------

TEST(CheckpointDir, ForeignCheckpointsAreFound) {
  ScratchDir d;
  const std::string dir = d.path().string();
  EXPECT_FALSE(find_foreign_checkpoint(dir, kRunA, false));  // empty
  write_checkpoint(d.file("checkpoint-00000001.h5"), kRunA);
  write_checkpoint(d.file("checkpoint-00000002.h5"), kRunA);
  d.write("metrics.jsonl", "{}\n");  // not named like a checkpoint: none of the check's business
  EXPECT_FALSE(find_foreign_checkpoint(dir, kRunA, false));

  const auto other = find_foreign_checkpoint(dir, kRunB, false);
  ASSERT_TRUE(other);
  EXPECT_EQ(name_of(other->path), "checkpoint-00000001.h5");
  EXPECT_EQ(other->why, "is a checkpoint of another run");
  EXPECT_TRUE(other->another_run);
  EXPECT_EQ(other->more, 1);

  write_checkpoint(d.file("checkpoint-00000003.h5"), "");  // an older plexus's
  const auto old = find_foreign_checkpoint(dir, kRunA, false);
  ASSERT_TRUE(old);
  EXPECT_EQ(name_of(old->path), "checkpoint-00000003.h5");
  EXPECT_NE(old->why.find("without a run identity"), std::string::npos) << old->why;
  EXPECT_FALSE(old->another_run);
  EXPECT_FALSE(find_foreign_checkpoint(dir, kRunA, true));  // accepted where the run resumes from

  d.write("checkpoint-00000004.h5", "a user's notes");
  const auto unreadable = find_foreign_checkpoint(dir, kRunA, true);
  ASSERT_TRUE(unreadable);
  EXPECT_EQ(name_of(unreadable->path), "checkpoint-00000004.h5");
  EXPECT_EQ(unreadable->why.rfind("cannot be read", 0), 0u) << unreadable->why;

  fs::remove(d.path() / "checkpoint-00000004.h5");
  fs::create_symlink("checkpoint-00000001.h5", d.path() / "checkpoint-00000009.h5");
  const auto link = find_foreign_checkpoint(dir, kRunA, true);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->why, "is a symbolic link");
}

// ---- rotation ---------------------------------------------------------------------------------

TEST(CheckpointDir, RotationRemovesOnlyTheRunsOwnOldest) {
  ScratchDir d;
  const std::string dir = d.path().string();
  write_checkpoint(d.file("checkpoint-00000001.h5"), kRunB, 1);  // another run's, oldest
  for (int e = 2; e <= 5; ++e) write_checkpoint(checkpoint_path(dir, e), kRunA, e);
  write_checkpoint(d.file("checkpoint-00000009.h5"), kRunB, 9);  // another run's, newest
  write_checkpoint(d.file("checkpoint-00000000.h5"), "", 0);     // an older plexus's
  d.write("checkpoint-00000006.h5", "a user's file named like a checkpoint");
  d.write("run.jsonl", "{}\n");
  fs::create_directory(d.path() / "checkpoint-00000007.h5");
  fs::create_symlink("checkpoint-00000008.h5", d.path() / "checkpoint-00000008.h5");  // a loop
  fs::create_symlink("checkpoint-00000002.h5", d.path() / "checkpoint-0000000010.h5");  // a link to ours

  const std::vector<std::string> removed = remove_old_checkpoints(dir, 2, kRunA);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(name_of(removed[0]), "checkpoint-00000002.h5");
  EXPECT_EQ(name_of(removed[1]), "checkpoint-00000003.h5");
  EXPECT_EQ(names_in(d.path()),
            (std::vector<std::string>{"checkpoint-00000000.h5", "checkpoint-0000000010.h5", "checkpoint-00000001.h5",
                                      "checkpoint-00000004.h5", "checkpoint-00000005.h5", "checkpoint-00000006.h5",
                                      "checkpoint-00000007.h5", "checkpoint-00000008.h5", "checkpoint-00000009.h5",
                                      "run.jsonl"}));
  EXPECT_TRUE(remove_old_checkpoints(dir, 2, kRunA).empty());  // two left: nothing more
  EXPECT_TRUE(remove_old_checkpoints(dir, 0, kRunA).empty());  // --keep 0 keeps all
  EXPECT_TRUE(remove_old_checkpoints(dir, 1, "").empty());     // no identity: nothing is provably ours
  EXPECT_EQ(remove_old_checkpoints(dir, 1, kRunB).size(), 1u);  // run B's own oldest
  EXPECT_TRUE(fs::exists(d.path() / "checkpoint-00000009.h5"));
}

// A SIGKILL during a checkpoint's write leaves its temporary: the next run holding the directory
// removes exactly those, nothing else named alike.
TEST(CheckpointDir, AKilledRunsTemporariesAreRemovedAndNothingElse) {
  ScratchDir d;
  const std::string dir = d.path().string();
  const std::string own = std::to_string(::getpid());
  write_checkpoint(d.file("checkpoint-00000004.h5"), kRunA, 4);
  d.write("checkpoint-00000005.h5.tmp.4242", "half a checkpoint");      // a killed run's
  d.write("checkpoint-0000000012.h5.tmp.7", "half a checkpoint");       // ten digits
  d.write("checkpoint-00000006.h5.tmp." + own, "this process's own");  // being written now
  d.write("checkpoint-0000005.h5.tmp.4242", "seven digits: not a checkpoint's name");
  d.write("checkpoint-00000005.h5.tmp.", "no pid");
  d.write("checkpoint-00000005.h5.tmp.12a", "not a pid");
  d.write("checkpoint-00000005.h5.tmp.12345678901", "eleven digits");
  d.write("model.h5.tmp.4242", "another output's temporary");
  d.write("notes.txt", "a user's file");
  fs::create_directory(d.path() / "checkpoint-00000007.h5.tmp.99");
  fs::create_symlink("notes.txt", d.path() / "checkpoint-00000008.h5.tmp.99");
  const std::vector<std::string> removed = remove_checkpoint_temporaries(dir);
  std::vector<std::string> names;
  for (const std::string& r : removed) names.push_back(name_of(r));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"checkpoint-0000000012.h5.tmp.7", "checkpoint-00000005.h5.tmp.4242"}));
  std::vector<std::string> kept{"checkpoint-00000004.h5", "checkpoint-0000005.h5.tmp.4242",
                                      "checkpoint-00000005.h5.tmp.", "checkpoint-00000005.h5.tmp.12345678901",
                                      "checkpoint-00000005.h5.tmp.12a", "checkpoint-00000006.h5.tmp." + own,
                                      "checkpoint-00000007.h5.tmp.99", "checkpoint-00000008.h5.tmp.99", "model.h5.tmp.4242",
                                      "notes.txt"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(names_in(d.path()), kept);
  EXPECT_TRUE(remove_checkpoint_temporaries(dir).empty());
}

// ---- outputs that would name a checkpoint -------------------------------------------------------

TEST(CheckpointDir, OutputsNamingACheckpointFile) {
  ScratchDir d;
  const fs::path dir = d.path() / "ckpt";
  fs::create_directory(dir);
  const std::string ck = dir.string();
  EXPECT_TRUE(names_checkpoint_file((dir / "checkpoint-00000010.h5").string(), ck));
  EXPECT_TRUE(names_checkpoint_file((dir / "checkpoint-00000999.h5").string(), ck));  // any the run could write
  EXPECT_TRUE(names_checkpoint_file((dir / ".plexus-lock").string(), ck));
  EXPECT_TRUE(names_checkpoint_file((d.path() / "ckpt/../ckpt/checkpoint-00000001.h5").string(), ck));
  EXPECT_FALSE(names_checkpoint_file((dir / "model.h5").string(), ck));
  EXPECT_FALSE(names_checkpoint_file((d.path() / "checkpoint-00000010.h5").string(), ck));  // another directory
  // By a link to the file (dangling: the checkpoint is not written yet), or to the directory.
  fs::create_symlink(dir / "checkpoint-00000010.h5", d.path() / "model.h5");
  EXPECT_TRUE(names_checkpoint_file((d.path() / "model.h5").string(), ck));
  fs::create_directory_symlink(dir, d.path() / "alias");
  EXPECT_TRUE(names_checkpoint_file((d.path() / "alias/checkpoint-00000003.h5").string(), ck));
  EXPECT_TRUE(names_checkpoint_file((dir / "checkpoint-00000003.h5").string(), (d.path() / "alias").string()));
  // A checkpoint directory not yet created: compared by name.
  EXPECT_TRUE(names_checkpoint_file((d.path() / "new/checkpoint-00000001.h5").string(), (d.path() / "new").string()));
  EXPECT_FALSE(names_checkpoint_file("", ck));
}

// ---- locks --------------------------------------------------------------------------------------

TEST(RunLock, ASecondHolderIsRefusedWithTheFirstsName) {
  ScratchDir d;
  const std::string path = d.file(".plexus-lock");
  {
    io::RunLock first(path, "ckpt", "wait for it or use another --checkpoint-dir");
    ASSERT_TRUE(first.locked());
    std::ifstream in(path);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, io::lock_holder_text());
    // OFD locks conflict between open descriptions, within one process too.
    try {
      io::RunLock second(path, "ckpt", "wait for it or use another --checkpoint-dir");
      FAIL() << "two holders of one lock";
    } catch (const InputError& e) {
      EXPECT_EQ(e.message(), "ckpt: in use by another plexus run (" + io::lock_holder_text() +
                                           "); wait for it or use another --checkpoint-dir");
    }
    EXPECT_TRUE(fs::exists(path));  // the refused one removes nothing
  }
  EXPECT_FALSE(fs::exists(path));  // the holder removes its lock file
  io::RunLock again(path, "ckpt", "");
  EXPECT_TRUE(again.locked());
}

TEST(RunLock, AHolderThatDiedLeavesNoStaleLock) {
  ScratchDir d;
  const std::string path = d.file("m.jsonl.lock");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // holds the lock, says so, and is killed
    io::RunLock lock(path, "m.jsonl", "");
    const char c = 'x';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  try {
    io::RunLock refused(path, "m.jsonl", "wait for it or use another --metrics");
    ADD_FAILURE() << "the child's lock did not hold";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(child) + " on "), std::string::npos) << e.what();
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_TRUE(fs::exists(path));  // left behind by SIGKILL, but it locks nothing
  io::RunLock taken(path, "m.jsonl", "");
  EXPECT_TRUE(taken.locked());
}

TEST(RunLock, AnUncreatableLockFileIsAnInputError) {
  ScratchDir d;
  EXPECT_THROW(io::RunLock(d.file("missing-dir/.plexus-lock"), "ckpt", ""), InputError);
  fs::create_directory(d.path() / ".plexus-lock");  // not a file
  EXPECT_THROW(io::RunLock(d.file(".plexus-lock"), "ckpt", ""), InputError);
}

// ---- the file behind standard output ------------------------------------------------------------

// In a child whose standard output is `file` (opened as a shell's `>` does): prints "before",
// writes `lines` lines to the log `path` names, prints "after". Returns the child's exit status.
int log_beside_stdout(const std::string& file, const std::string& path, int lines) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0) ::_exit(3);
    ::close(fd);
    try {
      std::printf("before\n");  // stdio, as fmt::print: buffered, flushed before each log line
      io::OutputTarget out = io::check_output(path, io::OutputNeeds::Stream);
      if (!out.stream || out.shares_std_fd != 1) ::_exit(4);
      io::LineLog log(out);
      for (int k = 0; k < lines; ++k) {
        log.append("{\"line\":" + std::to_string(k) + "}");
        std::printf("progress %d\n", k);
      }
      log.commit();
      std::printf("after\n");
      std::fflush(stdout);
    } catch (...) {
      ::_exit(5);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(StandardStreams, ALogOnTheFileBehindStdoutFollowsWhatIsPrinted) {
  ScratchDir d;
  const std::string file = d.file("run.log");
  const std::string want =
      "before\n{\"line\":0}\nprogress 0\n{\"line\":1}\nprogress 1\n{\"line\":2}\nprogress 2\nafter\n";
  for (const std::string& path : {std::string("/dev/stdout"), std::string("/proc/self/fd/1"), file}) {
    ASSERT_EQ(log_beside_stdout(file, path, 3), 0) << path;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), want) << path;
  }
}

TEST(StandardStreams, SameFileAsStdoutOrStderr) {
  ScratchDir d;
  const std::string file = d.write("x.txt", "");
  EXPECT_EQ(io::same_file_as_standard_stream(file), 0);
  EXPECT_EQ(io::same_file_as_standard_stream(d.file("missing")), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(file.c_str(), O_WRONLY);
    if (fd < 0 || ::dup2(fd, 2) < 0) ::_exit(3);
    const bool ok = io::same_file_as_standard_stream(file) == 2 && io::same_file_as_standard_stream("/dev/stderr") == 2;
    // An HDF5 output there would be renamed away from under the shell's redirection: refused.
    bool refused = false;
    try {
      io::check_output(file, io::OutputNeeds::Seekable);
    } catch (const InputError&) {
      refused = true;
    }
    ::_exit(ok && refused ? 0 : 4);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace plexus
