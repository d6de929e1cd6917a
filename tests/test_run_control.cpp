// The line an interrupted run ends with (src/cli/run_control.cpp, interrupted): where to resume
// from, or why there is nothing to resume from — never "no --checkpoint-dir" when one was given.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

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

}  // namespace
}  // namespace plexus::cli
