# readme.snippets: every ```cpp block of README.md compiles as written, with -Werror and the
# warnings the project builds with (tests/readme/check-snippets.sh; the reader's own names, such as
# run_report(), are declared in tests/readme/snippet_prelude.hpp). A snippet shows results it does
# not use, so unused variables are allowed; a discarded [[nodiscard]] result is not.
add_test(NAME readme.snippets
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/readme/check-snippets.sh ${CMAKE_CXX_COMPILER} ${PROJECT_SOURCE_DIR}/README.md
          ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/readme/snippet_prelude.hpp
          ${CMAKE_CURRENT_BINARY_DIR}/readme-snippets
          -Wall -Wextra -Wpedantic -Werror -Wno-unused-variable -Wno-unused-but-set-variable)
set_tests_properties(readme.snippets PROPERTIES LABELS unit TIMEOUT 120)
