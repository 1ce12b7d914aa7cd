// SPDX-License-Identifier: Apache-2.0
// The libmicrohttpd functions nps-runner calls, spelled sym_<name>: libmicrohttpd is not
// linked but opened with dlopen(3) on first use (src/lazy/lazy_library.hpp,
// docs/startup.md), so a call site shows that it goes through the loader.
// sym_<name> has libmicrohttpd's own prototype of <name>; when libmicrohttpd or the
// symbol cannot be loaded (reported once on stderr) it returns the library's
// failure value (nullptr, MHD_NO, …).
// A libmicrohttpd function called without the prefix is an undefined symbol when
// linking: declare it here and define it in src/lazy/microhttpd_symbols.cpp.
#pragma once

#include <microhttpd.h>

decltype(::MHD_start_daemon) sym_MHD_start_daemon;
decltype(::MHD_stop_daemon) sym_MHD_stop_daemon;
decltype(::MHD_run) sym_MHD_run;
decltype(::MHD_get_timeout) sym_MHD_get_timeout;
decltype(::MHD_get_daemon_info) sym_MHD_get_daemon_info;
decltype(::MHD_suspend_connection) sym_MHD_suspend_connection;
decltype(::MHD_resume_connection) sym_MHD_resume_connection;
decltype(::MHD_get_connection_info) sym_MHD_get_connection_info;
decltype(::MHD_lookup_connection_value) sym_MHD_lookup_connection_value;
decltype(::MHD_get_connection_values_n) sym_MHD_get_connection_values_n;
decltype(::MHD_create_response_from_buffer_with_free_callback_cls) sym_MHD_create_response_from_buffer_with_free_callback_cls;
decltype(::MHD_create_response_from_callback) sym_MHD_create_response_from_callback;
decltype(::MHD_add_response_header) sym_MHD_add_response_header;
decltype(::MHD_queue_response) sym_MHD_queue_response;
decltype(::MHD_destroy_response) sym_MHD_destroy_response;
