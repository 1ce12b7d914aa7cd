// SPDX-License-Identifier: Apache-2.0
// LazyLibrary: a shared library opened with dlopen(3) on first use.
//
// Why: libcurl and libmicrohttpd (and their dependency trees: TLS, Kerberos,
// LDAP, SSH, IDN, ...) are ~40 shared objects whose loading and symbol
// relocation cost every nps-runner process ~5 ms of CPU at start, while only
// the fetch, pull and serve paths use them. src/lazy/*_symbols.cpp define
// the few functions of those libraries that we call, with the libraries'
// own prototypes, and forward each call to the symbol resolved here. The
// rest of the code calls the libraries as usual (docs/startup.md).
//
// A library or symbol that cannot be loaded is reported once on stderr and
// makes the forwarding function return its library's failure value.
#pragma once

#include <mutex>

namespace nps::lazy {

class LazyLibrary {
public:
    explicit constexpr LazyLibrary(const char* soname) : soname_(soname) {}
    LazyLibrary(const LazyLibrary&) = delete;
    LazyLibrary& operator=(const LazyLibrary&) = delete;

    // The address of `name`, or nullptr (reported on stderr). Thread-safe;
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
