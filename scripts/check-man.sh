#!/usr/bin/env bash
# check-man.sh — checks that the man pages sqllock(1) and sqllock-reaper(8) document exactly the
# options the programs' --help output lists, and that groff formats the pages without a warning.
#
# Usage: scripts/check-man.sh [--only sqllock|sqllock-reaper] SQLLOCK SQLLOCK_REAPER MANDIR
#   SQLLOCK, SQLLOCK_REAPER  the built programs (e.g. build/tools/sqllock/sqllock)
#   MANDIR                   the directory holding sqllock.1 and sqllock-reaper.8 (man/)
#   --only NAME              check one program and its page only (ctest runs one test each)
# Exit status 0 when everything agrees; 1 listing every difference and warning; 2 for bad usage.
# Needs groff (Debian: groff-base, which scripts/install-deps.sh installs). No database.
#
# What is compared, per program, and per command for sqllock (whose help is per command):
#  - from the program: the options in its `--help` output (`sqllock CMD --help` for each command
#    listed under "Commands:" in `sqllock --help`): every option word in the usage lines (from
#    "usage:" to the first blank line) and in the option lines (lines that start with two spaces
#    and a dash; the words before the description, which follows two or more spaces). --help
#    itself counts, since it printed the text, and so does -h when it prints the same text.
#  - from the page: the option words in the tag line of each .TP (or .TQ) paragraph in the
#    OPTIONS section. `.SS "sqllock CMD"` opens the options of command CMD, `.SS "Common options"`
#    those every command takes; sqllock(1) may have no other subsection there. The page's
#    command subsections must match the help's command list, and every option in a SYNOPSIS
#    block (.SY … .YS) must be documented in OPTIONS for that command.
# Lint: the page must be ASCII (roff escapes for anything else), its .TH must name the file, and
# `groff -man -ww -z` (plus the preprocessors its '\" line asks for) must print nothing, both for
# the default device and for -Tutf8, which is what man(1) shows on a terminal.
set -euo pipefail

usage() {
  sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

only=""
if [[ ${1-} == --only ]]; then
  [[ $# -ge 2 ]] || usage
  only=$2
  shift 2
  [[ $only == sqllock || $only == sqllock-reaper ]] || usage
fi
[[ $# -eq 3 ]] || usage
sqllock_bin=$1
reaper_bin=$2
man_dir=$3
for p in "$sqllock_bin" "$reaper_bin"; do
  [[ -x $p ]] || { echo "check-man: $p is not an executable program" >&2; exit 2; }
done
[[ -d $man_dir ]] || { echo "check-man: $man_dir is not a directory" >&2; exit 2; }
command -v groff >/dev/null || { echo "check-man: groff is not installed (apt-get install groff-base)" >&2; exit 2; }

export LC_ALL=C
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
problems=0
fail() {
  echo "FAIL: $*"
  problems=$((problems + 1))
}

# Option words: -x or --long-name, after the start of the text, a space, or one of [ ( | ,.
# For lines "KEY<TAB>text": prints "KEY<TAB>option" for each option word in text, sorted.
keyed_option_words() {
  awk -F'\t' '{
    s = " " $2
    while (match(s, /[][ (|,]--?[A-Za-z0-9][A-Za-z0-9-]*/)) {
      print $1 "\t" substr(s, RSTART + 1, RLENGTH - 1)
      s = substr(s, RSTART + RLENGTH)
    }
  }' | sort -u
}
# The option words of plain text lines, one per line, sorted.
option_words() {
  sed 's/^/-\t/' | keyed_option_words | cut -f2 | sort -u
}

# The help text of `PROGRAM [COMMAND] --help` on stdout; fails unless it exits 0 with output.
help_text() {
  local out
  if ! out=$(env -u SQLLOCK_DB "$@" --help </dev/null); then
    echo "check-man: '$* --help' failed" >&2
    return 1
  fi
  [[ -n $out ]] || { echo "check-man: '$* --help' printed nothing" >&2; return 1; }
  printf '%s\n' "$out"
}

# The options a help text lists (see the header), one per line, sorted.
help_options() {
  awk '
    /^usage:/ { in_usage = 1 }
    in_usage && /^[[:space:]]*$/ { in_usage = 0 }
    in_usage { print; next }
    /^  -/ {
      spec = substr($0, 3)
      cut = index(spec, "  ")
      if (cut > 0) spec = substr(spec, 1, cut - 1)
      print spec
    }' | option_words
}

# --help, and -h when `PROGRAM [COMMAND] -h` prints what --help printed ($1: that text).
help_flags() {
  local text=$1
  shift
  echo "--help"
  local out
  if out=$(env -u SQLLOCK_DB "$@" -h </dev/null 2>/dev/null) && [[ $out == "$text" ]]; then
    echo "-h"
  fi
}

# The commands listed under "Commands:" in a help text.
help_commands() {
  awk '/^Commands:/ { on = 1; next } on && /^[[:space:]]*$/ { on = 0 } on && /^  [a-z]/ { print $1 }'
}

# Turns roff source into plain words: fonts, quotes and escapes removed, \- made a dash. Takes
# lines "KEY<TAB>roff" (the macro name after the tab is dropped too) or plain roff lines.
roff_plain() {
  sed -E -e 's/(^|\t)\.[A-Za-z]+[[:space:]]*/\1/' -e 's/\\f(\[[^]]*\]|\(..|.)//g' -e 's/\\-/-/g' \
    -e 's/\\[&c]//g' -e 's/\\~/ /g' -e 's/\\e/\\/g' -e 's/"/ /g'
}

# Lines "SCOPE<TAB>plain tag" for every .TP/.TQ tag in the OPTIONS section of page $1, where SCOPE
# is "common", a command name (.SS "PROGRAM COMMAND"), "-" before any subsection, or
# "?<title>" for any other subsection; and "SCOPE<TAB>" for each subsection, even one without
# tags. $2 is the program name.
man_tags() {
  awk -v prog="$2" '
    function unquote(s) { gsub(/"/, "", s); sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    /^\.SH/ { section = unquote(substr($0, 4)); scope = "-"; next }
    section != "OPTIONS" { next }
    /^\.SS/ {
      title = unquote(substr($0, 4))
      if (title == "Common options") scope = "common"
      else if (index(title, prog " ") == 1 && split(title, w, " ") == 2) scope = w[2]
      else scope = "?" title
      print scope "\t"
      next
    }
    /^\.T[PQ]/ { want_tag = 1; next }
    want_tag && /^\.\\"/ { next }
    want_tag { print scope "\t" $0; want_tag = 0 }' "$1" | roff_plain
}

# The options of scope $2, from a file $1 of lines "SCOPE<TAB>option".
tags_options() {
  awk -F'\t' -v s="$2" '$1 == s { print $2 }' "$1" | sort -u
}

# Lines "COMMAND<TAB>option" for the SYNOPSIS blocks of page $1 (COMMAND "-" for the program
# alone); $2 is the program name.
synopsis_options() {
  awk -v prog="$2" '
    /^\.SH/ { s = $0; gsub(/"/, "", s); in_syn = (s ~ /^\.SH[ \t]+SYNOPSIS[ \t]*$/); next }
    !in_syn { next }
    /^\.SY/ {
      name = substr($0, 4); gsub(/"/, "", name)
      n = split(name, w, " ")
      cmd = (n >= 2 && w[1] == prog) ? w[2] : "-"
      next
    }
    /^\.YS/ { cmd = ""; next }
    cmd != "" { print cmd "\t" $0 }' "$1" | roff_plain | keyed_option_words
}

# The words of list $1 (whitespace-separated) that list $2 lacks, one per line (and an empty line
# when $1 is empty: callers iterate over the words).
missing() {
  comm -23 <(tr -s '[:blank:]' '\n' <<<"$1" | sort -u) <(tr -s '[:blank:]' '\n' <<<"$2" | sort -u)
}

# Reports the differences between the options of --help ($3) and of the page ($4), for the
# program or command named $1, page $2.
compare() {
  local opt
  for opt in $(missing "$3" "$4"); do fail "$1: $opt is in --help but not in $2"; done
  for opt in $(missing "$4" "$3"); do fail "$1: $opt is in $2 but not in --help"; done
}

lint_page() {
  local page=$1 base section name th pre=() out dev
  base=$(basename "$page")
  name=${base%.*}
  section=${base##*.}
  if grep -n '[^ -~	]' "$page" >/dev/null; then
    fail "$page: non-ASCII characters (use roff escapes such as \\(em) on lines $(grep -n '[^ -~	]' "$page" | cut -d: -f1 | paste -sd, -)"
  fi
  th=$(grep -m1 '^\.TH' "$page" || true)
  read -r _ th_name th_section _ <<<"$th"
  if [[ ${th_name-} != "${name^^}" || ${th_section-} != "$section" ]]; then
    fail "$page: .TH says '${th_name-} ${th_section-}', expected '${name^^} $section'"
  fi
  # The preprocessor line: '\" t asks for tbl, e eqn, p pic, r refer.
  local first preprocessor_re=$'^\'\\\\" ([a-z]+)'
  first=$(head -n1 "$page")
  if [[ $first =~ $preprocessor_re ]]; then
    local letters=${BASH_REMATCH[1]} i
    for ((i = 0; i < ${#letters}; i++)); do
      case ${letters:i:1} in
        t) pre+=(-t) ;; e) pre+=(-e) ;; p) pre+=(-p) ;; r) pre+=(-R) ;; g) pre+=(-g) ;;
        *) fail "$page: unknown preprocessor '${letters:i:1}' in its first line" ;;
      esac
    done
  fi
  for dev in "" -Tutf8; do
    if ! out=$(groff "${pre[@]}" -man -ww -z ${dev:+"$dev"} "$page" 2>&1) || [[ -n $out ]]; then
      fail "$page: groff ${pre[*]} -man -ww -z${dev:+ $dev} reports:"
      printf '%s\n' "$out" | sed 's/^/    /'
    fi
  done
}

check_sqllock() {
  local page=$man_dir/sqllock.1
  [[ -f $page ]] || { fail "$page is missing"; return; }
  lint_page "$page"
  local tags=$work/sqllock.tags opts=$work/sqllock.options syn=$work/sqllock.synopsis
  man_tags "$page" sqllock >"$tags"
  keyed_option_words <"$tags" >"$opts"
  synopsis_options "$page" sqllock >"$syn"

  local main commands scopes common listed help_side man_side cmd text opt count=0
  main=$(help_text "$sqllock_bin")
  commands=$(printf '%s\n' "$main" | help_commands)
  [[ -n $commands ]] || { fail "no commands found under 'Commands:' in 'sqllock --help'"; return; }

  # The subsections of OPTIONS: one per command, "Common options", nothing else.
  scopes=$(cut -f1 "$tags" | sort -u)
  for cmd in $(printf '%s\n' "$scopes" | grep '^?' | cut -c2- | tr ' ' '_'); do
    fail "$page: OPTIONS subsection '${cmd//_/ }' is neither 'Common options' nor 'sqllock COMMAND'"
  done
  for cmd in $(missing "$commands" "$scopes"); do
    fail "$page: no OPTIONS subsection 'sqllock $cmd' for command '$cmd' of 'sqllock --help'"
  done
  for cmd in $(missing "$(printf '%s\n' "$scopes" | grep -v '^?')" "$commands common -"); do
    fail "$page: documents command '$cmd', which 'sqllock --help' does not list"
  done
  for opt in $(tags_options "$opts" -); do
    fail "$page: $opt is documented in OPTIONS before any subsection"
  done

  # sqllock alone (`sqllock --help`): its options must be among the common ones.
  common=$(tags_options "$opts" common)
  help_side=$(printf '%s\n' "$main" | help_options; help_flags "$main" "$sqllock_bin")
  for opt in $(missing "$help_side" "$common"); do
    fail "sqllock: $opt is in 'sqllock --help' but not under 'Common options' in $page"
  done
  for opt in $(missing "$(tags_options "$syn" -)" "$common"); do
    fail "$page: the SYNOPSIS of 'sqllock' alone shows $opt, which is not under 'Common options'"
  done
  for cmd in $(missing "$(cut -f1 "$syn")" "$commands -"); do
    fail "$page: the SYNOPSIS shows command '$cmd', which 'sqllock --help' does not list"
  done

  # Each command: its --help against its subsection plus the common options.
  for cmd in $commands; do
    text=$(help_text "$sqllock_bin" "$cmd")
    listed=$(printf '%s\n' "$text" | help_options)
    [[ -n $listed ]] || fail "sqllock $cmd: no options found in its --help (has the help format changed?)"
    help_side="$listed $(help_flags "$text" "$sqllock_bin" "$cmd")"
    man_side="$(tags_options "$opts" "$cmd") $common"
    compare "sqllock $cmd" "$page" "$help_side" "$man_side"
    for opt in $(missing "$(tags_options "$syn" "$cmd")" "$man_side"); do
      fail "$page: the SYNOPSIS of 'sqllock $cmd' shows $opt, which OPTIONS does not document for it"
    done
    count=$((count + $(wc -w <<<"$help_side")))
  done
  echo "sqllock: compared $count options of $(wc -w <<<"$commands") commands with $page"
}

check_reaper() {
  local page=$man_dir/sqllock-reaper.8
  [[ -f $page ]] || { fail "$page is missing"; return; }
  lint_page "$page"
  local tags=$work/sqllock-reaper.tags text listed help_side man_side opt
  man_tags "$page" sqllock-reaper >"$tags"
  text=$(help_text "$reaper_bin")
  listed=$(printf '%s\n' "$text" | help_options)
  [[ -n $listed ]] || fail "sqllock-reaper: no options found in its --help (has the help format changed?)"
  help_side="$listed $(help_flags "$text" "$reaper_bin")"
  # No commands: every subsection of OPTIONS is only a grouping.
  man_side=$(keyed_option_words <"$tags" | cut -f2)
  compare "sqllock-reaper" "$page" "$help_side" "$man_side"
  for opt in $(missing "$(synopsis_options "$page" sqllock-reaper | cut -f2)" "$man_side"); do
    fail "$page: the SYNOPSIS shows $opt, which OPTIONS does not document"
  done
  echo "sqllock-reaper: compared $(wc -w <<<"$help_side") options with $page"
}

if [[ -z $only || $only == sqllock ]]; then check_sqllock; fi
if [[ -z $only || $only == sqllock-reaper ]]; then check_reaper; fi

if ((problems > 0)); then
  echo "check-man: $problems problem(s); the man pages and --help must agree (see scripts/check-man.sh)"
  exit 1
fi
echo "check-man: man pages agree with --help; groff reports no warnings"
