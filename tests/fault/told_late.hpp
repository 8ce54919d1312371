// The told-on-return control (--control told-on-return): a table_lock holder that ignores the
// library's lost signal (lost_token, on_lost) and learns that it lost its lock only from a
// statement of its own, sent through its lock connections — which a network partition freezes —
// once that statement returns. That is how a holder learns when the loss is signalled only as a
// stalled renewal returns, whatever the library does meanwhile: told-before-granted must see
// another holder granted the lock before this one was told (fault/told_check.hpp).
//
// After the worker's section, the holder lingers L/2–2 L, asking every L/3 with
// SELECT fence FROM distributed_lock WHERE resource = ? whether the row is still its grant; when
// it is not (taken over or deleted), it records the loss (L) and releases. A question that fails
// tells it nothing. While its lock connections are partitioned, the question hangs until they
// carry bytes again, and the holder stays in its section.
#pragma once

#include <memory>
#include <vector>

#include "fault/config.hpp"
#include "fault/locker.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {

// `table_holders` (table_lock holders on `db`, holders[i] of resource_name(i)) made told-on-return;
// each lingering announces its end through `plan` (fault/locker.hpp), so that partitions find it.
std::vector<std::unique_ptr<test::lock_holder>> told_on_return_holders(
    const run_config& cfg, const database& db, std::vector<std::unique_ptr<test::lock_holder>> table_holders,
    const section_plan& plan);

}  // namespace sqllock::fault
