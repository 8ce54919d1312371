# Warning and sanitizer flags for sqllock's own targets (never forced on consumers).
add_library(sqllock_build_flags INTERFACE)
target_compile_options(sqllock_build_flags INTERFACE -Wall -Wextra -Wpedantic
  $<$<BOOL:${SQLLOCK_WERROR}>:-Werror>)
if(SQLLOCK_SANITIZE)
  target_compile_options(sqllock_build_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(sqllock_build_flags INTERFACE -fsanitize=address,undefined)
endif()

# The library and the programs are also clean of shadowing and of implicit narrowing or sign
# changes; the tests are not held to these (they compare signed and unsigned counts freely).
add_library(sqllock_strict_warnings INTERFACE)
target_compile_options(sqllock_strict_warnings INTERFACE -Wshadow -Wconversion -Wsign-conversion)
