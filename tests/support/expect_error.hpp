// Asserting that a call fails the documented way: the exception type of sqllock/error.hpp, and a
// message that says what is wrong (each expected fragment appears in it).
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <typeinfo>

namespace sqllock::test {

// Runs `call`, which must throw an `E` whose what() contains every fragment of `says`. `context`
// names the call in failure messages. Returns the message ("" when the call did not throw E).
template <class E, class F>
std::string expect_error(F&& call, std::initializer_list<std::string_view> says, const std::string& context) {
  try {
    call();
  } catch (const E& e) {
    const std::string what = e.what();
    for (auto fragment : says)
      EXPECT_NE(what.find(fragment), std::string::npos)
          << context << ": the message should contain '" << fragment << "': " << what;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
    return "";
  }
  ADD_FAILURE() << context << ": accepted (expected " << typeid(E).name() << ")";
  return "";
}

}  // namespace sqllock::test
