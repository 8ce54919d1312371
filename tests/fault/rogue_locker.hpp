// The negative control "client-clock expiry": a peer that shares sqllock's lock table but
// decides that a lease ran out by its own clock — which runs 5 leases fast, like a host with a
// skewed clock — and then takes the row over with raw SQL (a compare-and-set on the fence it
// read). sqllock's lockers around it are unchanged; the checkers must see the overlapping grants.
// PostgreSQL only (it draws fences from sqllock's sequence).
#pragma once

#include <memory>

#include "fault/config.hpp"
#include "fault/locker.hpp"

namespace sqllock::fault {

std::unique_ptr<locker> make_client_clock_locker(const run_config& cfg, const database& db);

}  // namespace sqllock::fault
