#pragma once
// The one-line message ("where: what", InputError::message) of the InputError a call throws, for
// tests that check what a refusal says; "" when it throws none. And a gtest check of one.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "plexus/error.hpp"

namespace plexus::test {

template <class F>
std::string input_error_message(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

// Runs f and expects an InputError whose where() is `where`, whose message contains `what` and
// is one line.
inline void expect_input_error(const std::function<void()>& f, const std::string& where, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no InputError; wanted " << where << ": " << what;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.message();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.message();
    EXPECT_EQ(e.message().find('\n'), std::string::npos) << "multi-line message: " << e.message();
  }
}

}  // namespace plexus::test
