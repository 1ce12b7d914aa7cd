#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A task-callback receiver for the report tests: HTTP(S) on 127.0.0.1.

Usage: callback_server.py --routes FILE --log FILE --port-file FILE
                          [--cert PEM --key PEM] [--secret BASE64URL]

Accepts any method. The routes file (re-read on every request) maps a path
to {"status": 200, "headers": {"Name": "value"}, "body": "text"}; an unknown
path answers 404. Each request is appended to the log file as one JSON line:
  {"method", "path", "body", "content_type", "idempotency_key", "signature",
   "signature_valid"}
where signature_valid is the receiver's own verification of X-NPS-Signature
(NPS-5 §9.4: "sha256=" + lowercase hex HMAC-SHA256 keyed with the
base64url-decoded secret, over the raw body, compared in constant time), or
null without --secret. The port is written to the port file once listening.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOG_LOCK = threading.Lock()


def decode_secret(text):
    padded = text + "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--routes", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--secret")
    args = parser.parse_args()
    key = decode_secret(args.secret) if args.secret else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *unused):
            pass

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            signature = self.headers.get("X-NPS-Signature")
            valid = None
            if key is not None:
                expected = "sha256=" + hmac.new(key, raw, hashlib.sha256).hexdigest()
                valid = signature is not None and hmac.compare_digest(expected, signature)
            path = urlsplit(self.path).path
            record = {
                "method": self.command,
                "path": path,
                "body": raw.decode("utf-8", "replace"),
                "content_type": self.headers.get("Content-Type"),
                "idempotency_key": self.headers.get("Idempotency-Key"),
                "signature": signature,
                "signature_valid": valid,
            }
            with LOG_LOCK, open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            try:
                with open(args.routes, encoding="utf-8") as f:
                    routes = json.load(f)
            except (OSError, ValueError):
                routes = {}
            route = routes.get(path)
            if route is None:
                self.answer(404, {}, b"not found")
                return
            self.answer(route.get("status", 200), route.get("headers", {}),
                        route.get("body", "").encode("utf-8"))

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

        def answer(self, status, headers, body):
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
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
