// SPDX-License-Identifier: Apache-2.0
// The libcurl functions nps-runner calls, spelled sym_<name>: libcurl is not
// linked but opened with dlopen(3) on first use (src/lazy/lazy_library.hpp,
// docs/startup.md), so a call site shows that it goes through the loader.
// sym_<name> has libcurl's own prototype of <name>; when libcurl or the
// symbol cannot be loaded (reported once on stderr) it returns the library's
// failure value (nullptr, CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR, …).
// A libcurl function called without the prefix is an undefined symbol when
// linking: declare it here and define it in src/lazy/curl_symbols.cpp.
#pragma once

#include <curl/curl.h>

decltype(::curl_global_init) sym_curl_global_init;
decltype(::curl_easy_init) sym_curl_easy_init;
decltype(::curl_easy_setopt) sym_curl_easy_setopt;
decltype(::curl_easy_getinfo) sym_curl_easy_getinfo;
decltype(::curl_easy_perform) sym_curl_easy_perform;
decltype(::curl_easy_cleanup) sym_curl_easy_cleanup;
decltype(::curl_easy_strerror) sym_curl_easy_strerror;
decltype(::curl_slist_append) sym_curl_slist_append;
decltype(::curl_slist_free_all) sym_curl_slist_free_all;
decltype(::curl_url) sym_curl_url;
decltype(::curl_url_cleanup) sym_curl_url_cleanup;
decltype(::curl_url_get) sym_curl_url_get;
decltype(::curl_url_set) sym_curl_url_set;
decltype(::curl_free) sym_curl_free;
decltype(::curl_multi_init) sym_curl_multi_init;
decltype(::curl_multi_cleanup) sym_curl_multi_cleanup;
decltype(::curl_multi_setopt) sym_curl_multi_setopt;
decltype(::curl_multi_add_handle) sym_curl_multi_add_handle;
decltype(::curl_multi_remove_handle) sym_curl_multi_remove_handle;
decltype(::curl_multi_socket_action) sym_curl_multi_socket_action;
decltype(::curl_multi_info_read) sym_curl_multi_info_read;
decltype(::curl_multi_strerror) sym_curl_multi_strerror;
