// The run-control policy of long runs (src/cli/run_control.cpp), in-process:
//  - the line an interrupted run ends with: where to resume from, or why there is nothing to
//    resume from — never "no --checkpoint-dir" when one was given;
//  - whose checkpoints a directory holds: a resumed run keeps the identity of the run it
//    continues (so it may resume in place and rotate that run's checkpoints), a fresh run gets a
//    new one and is refused a directory holding another run's checkpoints; a killed run's
//    temporaries are removed by the next run.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "io/model_files/checkpoint_dir.hpp"
#include "plexus/error.hpp"
#include "checkpoint_fixture.hpp"
#include "scratch_dir.hpp"
#include "src/cli/run_control.hpp"

namespace plexus::cli {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RunControl, AnInterruptionSaysWhereToResumeOrWhyItCannot) {
  CheckpointOptions o;
  const CheckpointSchedule none(o, /*root=*/false);
  const std::string no_dir = interrupted(SIGTERM, "steps", 0, 10, none, "", true);
  EXPECT_TRUE(has(no_dir, "interrupted by SIGTERM after step 0 of 10 (work after it abandoned)")) << no_dir;
  EXPECT_TRUE(has(no_dir, "no --checkpoint-dir: nothing saved to resume from")) << no_dir;

  o.dir = "ckpt";
  const CheckpointSchedule unwritten(o, false);
  const std::string nothing_yet = interrupted(SIGINT, "steps", 0, 10, unwritten, "ckpt", true);
  EXPECT_TRUE(has(nothing_yet, "no checkpoint written to ckpt yet: nothing saved to resume from")) << nothing_yet;
  EXPECT_FALSE(has(nothing_yet, "--checkpoint-dir")) << nothing_yet;

  CheckpointSchedule written(o, false);
  written.written("ckpt/checkpoint-00000003.h5");
  const std::string resumable = interrupted(SIGTERM, "epochs", 3, 10, written, "ckpt", false);
  EXPECT_TRUE(has(resumable, "after epoch 3 of 10; checkpoint ckpt/checkpoint-00000003.h5 (continue with --resume ckpt)"))
      << resumable;
}

using plexus::testing::write_checkpoint;

std::string error_of(const CheckpointOptions& o, ProcessGrid& grid, RunCheckpoints* out = nullptr) {
  try {
    RunCheckpoints r = prepare_checkpoints(o, grid, {});
    if (out) *out = std::move(r);
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

TEST(RunControl, AResumedRunKeepsTheIdentityOfTheRunItContinues) {
  testing::ScratchDir d;
  const std::string dir = (d.path() / "ckpt").string();
  std::filesystem::create_directory(dir);
  const std::string id = "00112233445566778899aabbccddeeff";
  write_checkpoint(checkpoint_path(dir, 3), id, 3);
  write_checkpoint(checkpoint_path(dir, 4), id, 4);
  auto grid = ProcessGrid::single();
  CheckpointOptions o;
  o.dir = dir;
  o.resume = dir;  // resumed in place
  RunCheckpoints run;
  EXPECT_EQ(error_of(o, *grid, &run), "");
  EXPECT_EQ(run.run_id, id);
  EXPECT_EQ(run.resume_from, checkpoint_path(dir, 4));
  run.lock.reset();
  // A fresh run there: a new identity, and the directory holds another run's checkpoints.
  o.resume.clear();
  const std::string fresh = error_of(o, *grid);
  EXPECT_NE(fresh.find("holds files named like checkpoints that are not this run's"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("--resume " + dir + " continues that run"), std::string::npos) << fresh;
  // Resumed elsewhere: the new directory's checkpoints carry the resumed run's identity.
  const std::string other = (d.path() / "next").string();
  o.dir = other;
  o.resume = dir;
  EXPECT_EQ(error_of(o, *grid, &run), "");
  EXPECT_EQ(run.run_id, id);
  run.lock.reset();
  // A killed run's temporary in the directory is gone once the next run holds it.
  const std::string left = checkpoint_path(dir, 5) + ".tmp.4242";
  d.write("ckpt/" + std::filesystem::path(left).filename().string(), "half a checkpoint");
  o.dir = dir;
  EXPECT_EQ(error_of(o, *grid, &run), "");
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 4)));
}

}  // namespace
}  // namespace plexus::cli
