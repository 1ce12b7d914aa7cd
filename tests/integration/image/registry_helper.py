#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test helpers for `image pull`, on loopback only (standard library + openssl).

token   a token service for docker-registry's token authentication: checks
        basic credentials and answers a JWT (RS256, signed with `openssl
        dgst`, its certificate in the x5c header) granting the scopes asked for.
proxy   a faulty HTTP proxy in front of a plain-http registry: answers 503
        (Retry-After: 0) to the first N requests of each path, cuts the first
        body of each blob short, corrupts gzip layers or manifests, or
        redirects blob requests.

Each prints its port on the file named by --port-file once it listens and
appends one line per request to --log.
"""
import argparse
import base64
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def log_line(args, text):
    if args.log:
        with open(args.log, "a") as f:
            f.write(text + "\n")


def run(args, handler):
    server = Server(("127.0.0.1", 0), handler)
    server.args = args
    server.counts = {}
    server.lock = threading.Lock()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


class TokenHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_GET(self):
        args = self.server.args
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        auth = self.headers.get("Authorization", "")
        log_line(args, "GET %s auth=%s" % (self.path, auth.split(" ")[0] if auth else "none"))
        expected = "Basic " + base64.b64encode(("%s:%s" % (args.user, args.password)).encode()).decode()
        if url.path != "/token":
            self.send_error(404)
            return
        if auth != expected:
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"details":"bad credentials"}')
            return
        access = []
        for scope in query.get("scope", []):
            parts = scope.split(":")
            if len(parts) >= 3:
                access.append({"type": parts[0], "name": ":".join(parts[1:-1]), "actions": parts[-1].split(",")})
        with open(args.cert) as f:
            pem = f.read()
        der = base64.b64decode("".join(line for line in pem.splitlines() if "-----" not in line))
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
        claims = {"iss": args.issuer, "sub": args.user, "aud": query.get("service", [""])[0], "exp": now + 300,
                  "nbf": now - 10, "iat": now, "jti": str(now) + str(id(self)), "access": access}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", args.key], input=signing_input.encode(),
                                   stdout=subprocess.PIPE, check=True).stdout
        token = signing_input + "." + b64url(signature)
        body = json.dumps({"token": token, "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def count(self, key):
        with self.server.lock:
            n = self.server.counts.get(key, 0) + 1
            self.server.counts[key] = n
            return n

    def do_HEAD(self):
        self.forward(head=True)

    def do_GET(self):
        self.forward(head=False)

    def forward(self, head):
        args = self.server.args
        url = urllib.parse.urlparse(self.path)
        is_blob = "/blobs/sha256:" in url.path
        is_manifest = "/manifests/" in url.path
        n = self.count(url.path)
        log_line(args, "%s %s #%d" % (self.command, self.path, n))
        if args.fail_first and n <= args.fail_first and url.path != "/v2/":
            body = b'{"errors":[{"code":"UNAVAILABLE","message":"try again"}]}'
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if args.redirect_blobs and is_blob and not url.query:
            self.send_response(307)
            self.send_header("Location", "http://127.0.0.1:%d%s?redirected=1" % (self.server.server_address[1], url.path))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, url.path, headers=headers)
        reply = upstream.getresponse()
        body = reply.read()
        if reply.status == 200 and not head:
            if args.corrupt_layers and is_blob and body[:2] == b"\x1f\x8b":
                body = body[:-1] + bytes([body[-1] ^ 0xFF])
            if args.corrupt_manifests and is_manifest:
                body = body + b" "
        self.send_response(reply.status)
        for k, v in reply.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if args.truncate_first and is_blob and n == 1 and reply.status == 200 and not head:
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.end_headers()
        if not head:
            self.wfile.write(body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["token", "proxy"])
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log")
    parser.add_argument("--user", default="")
    parser.add_argument("--password", default="")
    parser.add_argument("--key")
    parser.add_argument("--cert")
    parser.add_argument("--issuer", default="nps-test-issuer")
    parser.add_argument("--upstream", type=int)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--truncate-first", action="store_true")
    parser.add_argument("--corrupt-layers", action="store_true")
    parser.add_argument("--corrupt-manifests", action="store_true")
    parser.add_argument("--redirect-blobs", action="store_true")
    args = parser.parse_args()
    run(args, TokenHandler if args.mode == "token" else ProxyHandler)


if __name__ == "__main__":
    sys.exit(main())
