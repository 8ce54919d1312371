#!/usr/bin/env bash
# check-snippets.sh CXX README INCLUDE_DIR PRELUDE OUT_DIR [flag…]: compiles every ```cpp block of
# README as written, each in a file of its own (-fsyntax-only, with the given flags): the block's
# own #include lines first, then <sqllock/sqllock.hpp> (README's first snippet includes it), the
# prelude (the reader's names: tests/readme/snippet_prelude.hpp), and the rest of the block as
# the body of a function. Prints each block's verdict; fails if any block does not compile.
set -euo pipefail
cxx=$1 readme=$2 include=$3 prelude=$4 out=$5
shift 5
mkdir -p "$out"
rm -f "$out"/block-*.cpp
awk -v out="$out" '
  /^```cpp[[:space:]]*$/ { n++; inside = 1; line = NR; f = sprintf("%s/block-%02d.cpp", out, n); body = ""; includes = ""; next }
  inside && /^```/ {
    printf "// README.md line %d\n%s#include <sqllock/sqllock.hpp>\n#include \"%s\"\n\nvoid readme_block_%d() {\n%s}\n", line, includes, prelude, n, body > f
    close(f); inside = 0; next
  }
  inside && /^#include/ { includes = includes $0 "\n"; next }
  inside { body = body $0 "\n" }
' prelude="$prelude" "$readme"
failed=0 total=0
for f in "$out"/block-*.cpp; do
  total=$((total + 1))
  if "$cxx" -std=c++20 -fsyntax-only -I"$include" "$@" "$f" 2>"$f.log"; then
    echo "ok      $(head -1 "$f" | sed 's|^// ||')"
  else
    echo "FAILED  $(head -1 "$f" | sed 's|^// ||') ($f):"
    sed 's/^/    /' "$f.log"
    failed=$((failed + 1))
  fi
done
((total > 0)) || { echo "no \`\`\`cpp block found in $readme"; exit 1; }
echo "$((total - failed)) of $total README snippets compile"
((failed == 0))
