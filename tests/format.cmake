# format.check: every C++ source is formatted as .clang-format says (scripts/check-format.sh, with
# clang-format 14). Label `format`: it reads the sources, it runs none of sqllock's code, so the
# sanitizer suite leaves it out.
add_test(NAME format.check COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-format.sh)
set_tests_properties(format.check PROPERTIES LABELS "format;process" TIMEOUT 120 SKIP_RETURN_CODE 77)
