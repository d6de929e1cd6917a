#pragma once
// The one-line message ("where: what", InputError::message) of the InputError a call throws, for
// tests that check what a refusal says; "" when it throws none.
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

}  // namespace plexus::test
