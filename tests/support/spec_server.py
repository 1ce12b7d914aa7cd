#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A scriptable HTTP(S) server for the SpawnSpec tests.

Usage: spec_server.py --routes FILE --log FILE --port-file FILE [--cert PEM --key PEM]

Serves GET only. The routes file (re-read on every request, so a test can
change answers while the server runs) maps a path (query ignored) to
  {"status": 200, "headers": {"Name": "value"}, "body": "text",
   "body_bytes": N,        # instead of body: N bytes of spaces
   "etag": "\"v1\"",       # answer 304 when If-None-Match carries it
   "delay_ms": N}          # wait before answering
An unknown path answers 404. Each request is appended to the log file as one
JSON line {path, query, if_none_match, if_modified_since, host, accept}.
The port is written to the port file once the server listens.
"""

import argparse
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOG_LOCK = threading.Lock()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--routes", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *unused):
            pass

        def do_GET(self):
            parts = urlsplit(self.path)
            record = {
                "path": parts.path,
                "query": parts.query,
                "if_none_match": self.headers.get("If-None-Match"),
                "if_modified_since": self.headers.get("If-Modified-Since"),
                "host": self.headers.get("Host"),
                "accept": self.headers.get("Accept"),
            }
            with LOG_LOCK, open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            try:
                with open(args.routes, encoding="utf-8") as f:
                    routes = json.load(f)
            except (OSError, ValueError):
                routes = {}
            route = routes.get(parts.path)
            if route is None:
                self.answer(404, {}, b"not found")
                return
            if route.get("delay_ms"):
                time.sleep(route["delay_ms"] / 1000.0)
            headers = dict(route.get("headers", {}))
            etag = route.get("etag")
            if etag is not None:
                headers["ETag"] = etag
                if self.headers.get("If-None-Match") == etag:
                    self.answer(304, headers, b"")
                    return
            if "body_bytes" in route:
                body = b" " * route["body_bytes"]
            else:
                body = route.get("body", "").encode("utf-8")
            self.answer(route.get("status", 200), headers, body)

        def answer(self, status, headers, body):
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
