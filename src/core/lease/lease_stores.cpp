// The stores of the leased kinds: the one list that names them (core/lease/lease_store.hpp).
#include "core/lease/lease_store.hpp"

#include <initializer_list>

#include "core/handle/field_value.hpp"
#include "core/lease/permit_store.hpp"
#include "core/lease/queue_store.hpp"
#include "core/lease/table_store.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

const lease_store& lease_store_of_tag(char tag) {
  for (const lease_store* store : {&lock_rows_store(), &permit_rows_store(), &queue_entries_store(queue_kind::fair),
                                   &queue_entries_store(queue_kind::rw)})
    if (store->tag() == tag) return *store;
  throw backend_error(std::string("a renewal returned a row of an unknown store '") + tag + "'", "", 0);
}

std::vector<held_lease> read_held_leases(const result& res, const lease_store* every_row) {
  std::vector<held_lease> out;
  out.reserve(res.rows.size());
  for (const auto& r : res.rows) {
    const lease_store* store = every_row;
    if (!store) {
      const auto tag = r.at(3).value_or("");
      store = &lease_store_of_tag(tag.size() == 1 ? tag[0] : '?');
    }
    out.push_back({r.at(0).value_or(""), r.at(1).value_or(""), field_int64(r.at(2), "fence"), store});
  }
  return out;
}

}  // namespace sqllock::detail
