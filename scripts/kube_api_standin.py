"""A stand-in for the local kube-apiserver, for the tests of protokube's Kubernetes steps (no
package ships a kube-apiserver for these machines). It speaks what protokube asks of the real one,
the way kOps' kubeconfig reaches it: HTTPS with its own CA, client-certificate authentication (a
client without a certificate the CA signed is refused in the TLS handshake), Kubernetes' JSON
shapes and `Status` errors, and

  GET   /version                                    the server's version
  GET   /api/v1/namespaces/<ns>                     the Namespace (`kube-system` once it exists)
  GET   /api/v1/nodes/<name>                        the Node, or a 404 Status
  GET   /api/v1/nodes?labelSelector=<key>=<value>   a NodeList of the nodes with that label
  PATCH /api/v1/nodes/<name>                        application/strategic-merge-patch+json:
                                                    metadata.labels merged (null removes)
  GET   /api/v1/namespaces/<ns>/serviceaccounts/<name>
  POST  /api/v1/namespaces/<ns>/serviceaccounts     201, or 409 AlreadyExists
  GET   /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/<name>
  POST  /apis/rbac.authorization.k8s.io/v1/clusterrolebindings   201, or 409 AlreadyExists

Nodes live in a JSON file (name -> labels) and the other objects in another (kind -> name ->
object), read on every request so a test can change them while the server runs; each request
is appended to a JSON-lines log (method, path, content type, body, the client certificate's
subject).

An API server wakes in stages, as kube-apiserver does on a new control-plane node: its port
refuses connections for the first REFUSED_FOR seconds (bound, not listening: Prints `PORT <n>`
at once), every request is answered 503 until READY_AFTER seconds have passed since start (still
coming up), and the `kube-system` namespace does not exist until KUBE_SYSTEM_AFTER seconds (a
404 for it and for anything in it: the bootstrap controllers have not made it yet). A file
NODES_FILE.faults.json, read on every write, can ask for the next N writes (POST, PATCH) to be
answered 503 (`{"failing_writes": N}`): an API server whose storage is not ready yet.
Usage: kube_api_standin.py CERT_DIR NODES_FILE LOG_FILE [READY_AFTER [KUBE_SYSTEM_AFTER
[REFUSED_FOR]]]
"""

import http.server
import json
import os
import ssl
import sys
import time
import urllib.parse

CERT_DIR, NODES, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
STARTED = time.monotonic()
READY_AT = STARTED + (float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
KUBE_SYSTEM_AT = STARTED + (float(sys.argv[5]) if len(sys.argv) > 5 else 0.0)
REFUSED_FOR = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
OBJECTS = NODES + ".objects.json"
FAULTS = NODES + ".faults.json"
NODES_PATH = "/api/v1/nodes"
SERVICE_ACCOUNTS = "serviceaccounts"
BINDINGS_PATH = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"


def load(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


def node_object(name, labels):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "resourceVersion": "1"}}


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        cert = self.connection.getpeercert() or {}
        subject = {k: v for rdn in cert.get("subject", ()) for (k, v) in rdn}
        with open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "content_type": self.headers.get("Content-Type"),
                                "body": body, "subject": subject}) + "\n")

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def not_found(self, kind, name):
        self.reply(404, status(404, "NotFound", f'{kind} "{name}" not found',
                               {"name": name, "kind": kind}))

    def body(self):
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"null")

    def starting(self):
        """Answers 503 while the server is still coming up."""
        if time.monotonic() < READY_AT:
            self.reply(503, status(503, "ServiceUnavailable",
                                   "the server is currently unable to handle the request"))
            return True
        return False

    def write_fails(self):
        """Answers 503 to a write while the test asks for failing writes."""
        faults = load(FAULTS, {})
        if faults.get("failing_writes", 0) > 0:
            faults["failing_writes"] -= 1
            save(FAULTS, faults)
            self.reply(503, status(503, "ServiceUnavailable",
                                   "the server is currently unable to handle the request"))
            return True
        return False

    def no_kube_system(self):
        """Answers 404 for `kube-system` and what lives in it until it exists."""
        path = urllib.parse.urlsplit(self.path).path
        if time.monotonic() < KUBE_SYSTEM_AT and path.startswith("/api/v1/namespaces/kube-system"):
            self.not_found("namespaces", "kube-system")
            return True
        return False

    def route(self):
        """(kind, namespace, name) of an object path, or None."""
        path = urllib.parse.urlsplit(self.path).path
        parts = path.strip("/").split("/")
        if path.startswith(BINDINGS_PATH):
            rest = path[len(BINDINGS_PATH):].strip("/")
            return ("clusterrolebindings", None, rest or None)
        if len(parts) >= 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == SERVICE_ACCOUNTS:
            return ("serviceaccounts", parts[3], parts[5] if len(parts) > 5 else None)
        return None

    def do_GET(self):
        self.record(None)
        if self.starting() or self.no_kube_system():
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/version":
            return self.reply(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0",
                                    "platform": "linux/amd64"})
        if url.path.startswith("/api/v1/namespaces/") and url.path.count("/") == 4:
            name = url.path.rsplit("/", 1)[1]
            if name not in ("kube-system", "default", "kube-public"):
                return self.not_found("namespaces", name)
            return self.reply(200, {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": name, "resourceVersion": "1"},
                                    "status": {"phase": "Active"}})
        if url.path == NODES_PATH:
            selector = urllib.parse.parse_qs(url.query).get("labelSelector", [""])[0]
            key, _, value = selector.partition("=")
            nodes = load(NODES, {})
            items = [node_object(n, l) for n, l in sorted(nodes.items())
                     if not selector or l.get(key) == value]
            return self.reply(200, {"apiVersion": "v1", "kind": "NodeList",
                                    "metadata": {"resourceVersion": "1"}, "items": items})
        if url.path.startswith(NODES_PATH + "/"):
            name = url.path[len(NODES_PATH) + 1:]
            nodes = load(NODES, {})
            if name not in nodes:
                return self.not_found("nodes", name)
            return self.reply(200, node_object(name, nodes[name]))
        route = self.route()
        if route and route[2]:
            kind, namespace, name = route
            found = load(OBJECTS, {}).get(kind, {}).get(f"{namespace or ''}/{name}")
            if found is None:
                return self.not_found(kind, name)
            return self.reply(200, found)
        self.not_found("path", url.path)

    def do_POST(self):
        body = self.body()
        self.record(body)
        if self.starting() or self.no_kube_system() or self.write_fails():
            return
        route = self.route()
        if not route or route[2] or not isinstance(body, dict):
            return self.reply(405, status(405, "MethodNotAllowed", "not allowed"))
        kind, namespace, _ = route
        name = body.get("metadata", {}).get("name")
        objects = load(OBJECTS, {})
        key = f"{namespace or ''}/{name}"
        if key in objects.setdefault(kind, {}):
            return self.reply(409, status(409, "AlreadyExists",
                                          f'{kind} "{name}" already exists',
                                          {"name": name, "kind": kind}))
        body.setdefault("metadata", {})["resourceVersion"] = "1"
        objects[kind][key] = body
        save(OBJECTS, objects)
        self.reply(201, body)

    def do_PATCH(self):
        body = self.body()
        self.record(body)
        if self.starting() or self.write_fails():
            return
        name = self.path.split("?")[0][len(NODES_PATH) + 1:]
        if self.headers.get("Content-Type") != "application/strategic-merge-patch+json":
            return self.reply(415, status(415, "UnsupportedMediaType", "unsupported"))
        nodes = load(NODES, {})
        if not self.path.startswith(NODES_PATH + "/") or name not in nodes:
            return self.not_found("nodes", name)
        for key, value in ((body or {}).get("metadata", {}).get("labels") or {}).items():
            if value is None:
                nodes[name].pop(key, None)
            else:
                nodes[name][key] = value
        save(NODES, nodes)
        self.reply(200, node_object(name, nodes[name]))


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(f"{CERT_DIR}/server.crt", f"{CERT_DIR}/server.key")
context.load_verify_locations(f"{CERT_DIR}/ca.crt")
context.verify_mode = ssl.CERT_REQUIRED
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
server.server_bind()
print(f"PORT {server.server_address[1]}", flush=True)
# Bound and not listening: a connection is refused, as by a node whose API server has not
# started.
time.sleep(REFUSED_FOR)
server.server_activate()
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
