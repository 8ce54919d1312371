#!/usr/bin/env bash
# Checks that every C++ source of the repository is formatted as .clang-format says, with
# clang-format 14 (Debian's clang-format-14; scripts/install-deps.sh installs it). Run by ctest as
# format.check; the quick tier of scripts/test.sh fails on unformatted code.
#
#   scripts/check-format.sh          list the files clang-format would change, and the first lines
#                                    of each change; exit 1 when there is any
#   scripts/check-format.sh --fix    format them in place
#
# The files are the *.cpp, *.hpp and *.h files under include/ src/ tests/ tools/ bench/ examples/
# fuzz/. Without clang-format-14 the check exits 77 (ctest: skipped), or fails under CI and
# SQLLOCK_TEST_REQUIRE_SERVERS (scripts/lib/required.sh): there the tool must be installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/required.sh
source scripts/lib/required.sh

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
  *) echo "check-format.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

format=$(command -v clang-format-14 || true)
if [[ -z "$format" ]]; then
  echo "check-format.sh: clang-format-14 is not installed (apt-get install clang-format-14, or scripts/install-deps.sh)" >&2
  required && exit 1
  exit 77
fi

mapfile -t files < <(find include src tests tools bench examples fuzz -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) | LC_ALL=C sort)
((${#files[@]})) || { echo "check-format.sh: no C++ files found" >&2; exit 1; }

if ((fix)); then
  "$format" -i --style=file "${files[@]}"
  echo "check-format.sh: formatted ${#files[@]} files"
  exit 0
fi

# One clang-format process for all files: --dry-run names each place it would change.
mapfile -t bad < <("$format" --style=file --dry-run "${files[@]}" 2>&1 |
  sed -nE 's/^(.+):[0-9]+:[0-9]+: (warning|error): code should be clang-formatted.*/\1/p' | uniq)
if ((${#bad[@]} == 0)); then
  echo "check-format.sh: all ${#files[@]} files are formatted"
  exit 0
fi
for f in "${bad[@]}"; do
  echo "== $f"
  diff -u "$f" <("$format" --style=file "$f") | sed -n '3,14p' || true
done
echo "check-format.sh: ${#bad[@]} of ${#files[@]} files are not formatted; scripts/check-format.sh --fix formats them" >&2
exit 1
