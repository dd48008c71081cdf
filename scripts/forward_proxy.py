#!/usr/bin/env python3
"""A forward HTTP proxy for the tests, as an egress proxy of a cluster with
`spec.networking.egressProxy` is (squid, say): `CONNECT host:port` tunnels and absolute-form
requests (`GET http://host:port/path`). Names are resolved by the proxy alone, from its map
(`NAME=ADDRESS` arguments; a name it does not know is refused with 502), so that the names the
tests give their stand-ins are reachable only through it.

Usage: forward_proxy.py LOG NAME=ADDRESS...  Prints `PORT <n>` once listening on 127.0.0.1; every
request is logged to LOG as one JSON line (`{"method", "target"}`).
"""

import json
import select
import socket
import socketserver
import sys
import threading

LOG = sys.argv[1]
NAMES = dict(arg.split("=", 1) for arg in sys.argv[2:])
LOCK = threading.Lock()


def log(method, target):
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps({"method": method, "target": target}) + "\n")


def resolve(hostport):
    host, _, port = hostport.rpartition(":")
    host = host.strip("[]")
    if host not in NAMES:
        return None
    return (NAMES[host], int(port))


def pipe(a, b):
    sockets = [a, b]
    while True:
        ready, _, _ = select.select(sockets, [], [], 30)
        if not ready:
            return
        for s in ready:
            data = s.recv(65536)
            if not data:
                return
            (b if s is a else a).sendall(data)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        conn = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        log(method, target)
        if method == "CONNECT":
            address = resolve(target)
            if address is None:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            upstream = socket.create_connection(address, timeout=10)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            pipe(conn, upstream)
            upstream.close()
            return
        # Absolute form: `GET http://host:port/path HTTP/1.1`.
        if not target.startswith("http://"):
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        hostport, _, path = target[len("http://"):].partition("/")
        if ":" not in hostport:
            hostport += ":80"
        address = resolve(hostport)
        if address is None:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        upstream = socket.create_connection(address, timeout=10)
        headers = [h for h in lines[1:] if not h.lower().startswith("proxy-")]
        request = "%s /%s %s\r\n%s\r\n\r\n" % (method, path, version, "\r\n".join(headers))
        upstream.sendall(request.encode("latin-1") + rest)
        pipe(conn, upstream)
        upstream.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
