// SPDX-License-Identifier: Apache-2.0
// LazyLibrary: a shared library opened with dlopen(3) on first use.
//
// Why: libcurl and libmicrohttpd (and their dependency trees: TLS, Kerberos,
// LDAP, SSH, IDN, ...) are ~40 shared objects whose loading and symbol
// relocation cost every nps-runner process ~5 ms of CPU at start, while only
// the fetch, pull and serve paths use them; libcrypto, linked statically,
// still cost ~0.5 ms. So they are not linked: the few functions we call are
// declared in nps/lazy/{curl,microhttpd,pq,crypto}.hpp as
// sym_<name>, with the libraries' own prototypes, and src/lazy/*_symbols.cpp
// define each to forward to the symbol resolved here. Call sites spell the
// prefix, so they show the indirection (docs/startup.md); calling a library
// function by its own name fails to link.
//
// A library or symbol that cannot be loaded is reported on stderr, once per
// library or symbol (the forwarding functions have the library's
// signatures, with no room for an Error), and makes the forwarding function
// return its library's failure value. This area is the lowest layer (libc
// only), so that base can hash with libcrypto.
#pragma once

#include <mutex>

namespace nps::lazy {

class LazyLibrary {
public:
    explicit constexpr LazyLibrary(const char* soname) : soname_(soname) {}
    LazyLibrary(const LazyLibrary&) = delete;
    LazyLibrary& operator=(const LazyLibrary&) = delete;

    // The address of `name`, or nullptr (logged). Thread-safe;
    // the library is opened on the first call and never closed.
    void* symbol(const char* name);

private:
    const char* soname_;
    std::once_flag opened_;
    void* handle_ = nullptr;
};

// Resolves `name` in `library` once per call site and casts it to the type
// of our own definition of the same function (they are the same function
// type: ours is declared by the library's header).
template <typename Function>
Function* resolve(LazyLibrary& library, const char* name)
{
    return reinterpret_cast<Function*>(library.symbol(name));
}

}  // namespace nps::lazy
