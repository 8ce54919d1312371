#!/bin/sh
# The cron job of examples/cron-single-instance: builds a report. It stands in for any job that
# must not run twice at once, on this host or another, and knows nothing about locks: the
# crontab line runs it under `sqllock run`, which holds the lock for as long as it works.
#
# REPORT_DIR: where the report goes (default /var/lib/app/reports); each run also appends a
# "start" and a "done" line to REPORT_DIR/runs.log. REPORT_WORK_SECONDS: how long the work takes
# (default 20).
set -eu

dir=${REPORT_DIR:-/var/lib/app/reports}
mkdir -p "$dir"
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }

echo "$(stamp) start host=$(uname -n) pid=$$" >>"$dir/runs.log"
sleep "${REPORT_WORK_SECONDS:-20}"  # the work
report=$dir/report-$(date -u +%Y-%m-%dT%H%M).txt
echo "report made by $(uname -n) at $(stamp)" >"$report.tmp"
mv "$report.tmp" "$report"
echo "$(stamp) done host=$(uname -n) pid=$$ report=$report" >>"$dir/runs.log"
