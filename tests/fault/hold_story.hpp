// What a violation's example says of a hold: which section it was, and what happened around it —
// so that a rare violation seen only in a CI log (whose run files are gone) can be understood.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fault/holds.hpp"
#include "fault/nemesis.hpp"

namespace sqllock::fault {

// When the run's first event happened (0 when it has none): the t0 every example counts from.
std::int64_t run_start(const std::vector<event>& events);

// "t=<ms>ms": `ns` as milliseconds since `t0` (the run's first event).
std::string at_ms(std::int64_t ns, std::int64_t t0);

// "r1 fence 7 pid 123/2 [t=…, t=…]": the hold's name, fence, process/thread and section.
std::string describe_hold(const hold_rec& h, std::int64_t t0);

// "called t=…; re-entered t=…; lost never; release ok t=…; faults: pause-short pid 123 [t=…, t=…]":
// the acquire call's start, re-entries, the first lost signal, the release's outcome, and the
// faults of its process or of the server from 6 s before the call to 1 s after the section.
std::string hold_story(const hold_rec& h, const std::vector<fault_event>& faults, std::int64_t t0);

}  // namespace sqllock::fault
