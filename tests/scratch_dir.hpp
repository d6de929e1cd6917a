#pragma once
// A scratch folder for the running test: named after the process id, the test suite and the
// test (ctest runs tests in parallel, each in a process of its own, so two tests never share
// one; gtest's random seed, the time in ms, is no such guarantee), created empty and removed,
// with whatever the test left in it, when the test ends.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace plexus::testing {

class ScratchDir {
 public:
  ScratchDir() {
    static int count = 0;  // several in one test
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "plexus-" + std::to_string(::getpid()) + "-" + std::to_string(count++);
    if (t) name += std::string("-") + t->test_suite_name() + "." + t->name();
    for (char& c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '_';
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The path of `name` inside the folder.
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `bytes` to `name` (creating subfolders) and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace plexus::testing
