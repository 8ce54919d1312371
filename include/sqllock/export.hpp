// sqllock/export.hpp — which declarations libsqllock exports.
//
// libsqllock is built with hidden symbol visibility: only declarations marked SQLLOCK_API — the
// public API of include/sqllock/ and the few detail entry points that its inline templates call —
// are visible to programs, so internal changes are not ABI changes. Applications never need this
// macro; it is public only because the public headers use it.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SQLLOCK_API __attribute__((visibility("default")))
#else
#define SQLLOCK_API
#endif
