// SPDX-License-Identifier: Apache-2.0
// The libpq functions nps-runner calls, spelled sym_<name>: libpq is not
// linked but opened with dlopen(3) on first use (src/lazy/lazy_library.hpp,
// docs/startup.md), so a call site shows that it goes through the loader.
// sym_<name> has libpq's own prototype of <name>; when libpq or the
// symbol cannot be loaded (reported once on stderr) it returns the library's
// failure value (nullptr, CONNECTION_BAD, PGRES_FATAL_ERROR, …).
// A libpq function called without the prefix is an undefined symbol when
// linking: declare it here and define it in src/lazy/pq_symbols.cpp.
#pragma once

#include <libpq-fe.h>

decltype(::PQconnectdb) sym_PQconnectdb;
decltype(::PQfinish) sym_PQfinish;
decltype(::PQstatus) sym_PQstatus;
decltype(::PQtransactionStatus) sym_PQtransactionStatus;
decltype(::PQerrorMessage) sym_PQerrorMessage;
decltype(::PQsetNoticeProcessor) sym_PQsetNoticeProcessor;
decltype(::PQsocket) sym_PQsocket;
decltype(::PQsetnonblocking) sym_PQsetnonblocking;
decltype(::PQconsumeInput) sym_PQconsumeInput;
decltype(::PQnotifies) sym_PQnotifies;
decltype(::PQexec) sym_PQexec;
decltype(::PQprepare) sym_PQprepare;
decltype(::PQexecPrepared) sym_PQexecPrepared;
decltype(::PQexecParams) sym_PQexecParams;
decltype(::PQresultStatus) sym_PQresultStatus;
decltype(::PQresultErrorMessage) sym_PQresultErrorMessage;
decltype(::PQresultErrorField) sym_PQresultErrorField;
decltype(::PQclear) sym_PQclear;
decltype(::PQntuples) sym_PQntuples;
decltype(::PQgetvalue) sym_PQgetvalue;
decltype(::PQgetlength) sym_PQgetlength;
decltype(::PQgetisnull) sym_PQgetisnull;
decltype(::PQcmdTuples) sym_PQcmdTuples;
decltype(::PQunescapeBytea) sym_PQunescapeBytea;
decltype(::PQfreemem) sym_PQfreemem;
