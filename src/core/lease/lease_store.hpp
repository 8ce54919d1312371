// A kind of leased row that the lease registry (core/lease/lease_registry.hpp) keeps: lock rows
// (table_lock, multi_lock), semaphore permits, and the wait queue's fair-lock and read-write
// entries. The registry renews rows, matches what a renewal found to its holds and deletes orphan
// rows through this interface alone, so it knows no lock kind by name: a leased kind brings its
// store (one constant object, defined beside the statements it runs) and lists it in
// core/lease/lease_stores.cpp, where a renewal's row tags are looked up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dialect/lease_table.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

class database_impl;
class lease_store;

// A row a renewal found still held by the handle: whose it is and in which store.
struct held_lease {
  std::string resource;
  std::string owner;
  std::int64_t fence = 0;
  const lease_store* store = nullptr;
};

class lease_store {
 public:
  // `table`: the lease table these rows live in, whose renewal renews them; `tag`: how that
  // renewal tags them when one statement renews several stores.
  constexpr lease_store(lease_table table, char tag) noexcept : table_(table), tag_(tag) {}
  lease_store(const lease_store&) = delete;
  lease_store& operator=(const lease_store&) = delete;

  lease_table table() const noexcept { return table_; }
  char tag() const noexcept { return tag_; }

  // Deletes `row`, which the handle renews but no hold stands behind: its acquire's reply was
  // lost, or it outlived a hold declared lost. Throws when the statement fails (the row's lease
  // then runs out on its own).
  virtual void end_orphan(database_impl& db, connection& conn, const held_lease& row) const = 0;

 protected:
  ~lease_store() = default;

 private:
  const lease_table table_;
  const char tag_;
};

// The store whose rows a renewal tags `tag` (core/lease/lease_stores.cpp); throws backend_error for a tag
// no store has.
const lease_store& lease_store_of_tag(char tag);

// The (resource, owner, fence) rows a renewal statement returned, all of `every_row`'s store, or,
// when it is null, each of the store its fourth column tags.
std::vector<held_lease> read_held_leases(const result& res, const lease_store* every_row);

}  // namespace sqllock::detail
