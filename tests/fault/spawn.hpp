// Starting programs from the fault controller: a worker process, a server script.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace sqllock::fault {

// Starts argv (argv[0] a path) with `env` added to this process's environment (an empty value
// removes the variable); stdout and stderr go to `log` (appended) — stdout to the file `out`
// instead when one is named (truncated). Returns its pid. Throws std::runtime_error when it
// cannot be started.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::map<std::string, std::string>& env = {}, const std::string& out = {});

// Runs argv to completion (as spawn) and returns its exit code (128 + N when killed by signal N).
// With `output`, its stdout is returned there (and appended to `log` as well).
int run(const std::vector<std::string>& argv, const std::string& log,
        const std::map<std::string, std::string>& env = {}, std::string* output = nullptr);

// Non-blocking: true (and the exit code in *code) once pid has exited and been reaped.
bool reap(pid_t pid, int* code);

}  // namespace sqllock::fault
