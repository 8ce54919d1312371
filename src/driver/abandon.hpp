// Helpers for connection::abandon(): letting go of a client-library object without running its
// destructor.
//
// In a forked child, destroying an inherited connection object would close the parent's session
// (libpq sends Terminate, Connector/C++ sends COM_QUIT and closes prepared statements). The child
// therefore leaks those objects on purpose; the memory goes back when the child exits.
#pragma once

#include <memory>

// GCC says it builds with AddressSanitizer by a macro, Clang by __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define SQLLOCK_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SQLLOCK_ADDRESS_SANITIZER 1
#endif
#endif

#if defined(SQLLOCK_ADDRESS_SANITIZER)
#include <sanitizer/lsan_interface.h>
#endif

namespace sqllock::detail {

// Releases `owner` without destroying what it points to. Under AddressSanitizer the object is
// registered as an intended leak, so leak checking stays useful for everything else.
template <class T, class D>
void leak_on_purpose(std::unique_ptr<T, D>& owner) noexcept {
  T* raw = owner.release();
#if defined(SQLLOCK_ADDRESS_SANITIZER)
  if (raw != nullptr) __lsan_ignore_object(raw);
#else
  (void)raw;
#endif
}

}  // namespace sqllock::detail
