#!/bin/sh
# Runs a test program as a PostgreSQL pass: NPS_TEST_STORE_BACKEND=postgresql
# makes the store fixtures and harnesses use the server named by
# NPS_TEST_PG_URL (scripts/test starts one with scripts/pg-scratch).
# Without that server the pass is skipped (exit 77), saying why.
if [ -z "${NPS_TEST_PG_URL:-}" ]; then
  echo "skipped: NPS_TEST_PG_URL is not set (scripts/test starts a throw-away PostgreSQL with scripts/pg-scratch;" \
       "install the postgresql package to run this pass)" >&2
  exit 77
fi
NPS_TEST_STORE_BACKEND=postgresql exec "$@"
