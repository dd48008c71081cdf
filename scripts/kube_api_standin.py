"""A stand-in for the local kube-apiserver, for the tests of protokube's label step (no package
ships a kube-apiserver for these machines). It speaks what protokube asks of the real one, the
way kOps' kubeconfig reaches it: HTTPS with its own CA, client-certificate authentication
(a client without a certificate the CA signed is refused in the TLS handshake), and

  GET   /api/v1/nodes/<name>   the Node, or a 404 Status when it is not registered
  PATCH /api/v1/nodes/<name>   application/strategic-merge-patch+json: metadata.labels merged
                               (a null value removes a label)

Nodes live in a JSON file (name -> labels), read on every request so a test can register a
node while the server runs; each request is appended to a JSON-lines log (method, path,
content type, body, the client certificate's subject). Prints `PORT <n>` when it listens on
127.0.0.1. Usage: kube_api_standin.py CERT_DIR NODES_FILE LOG_FILE
"""

import http.server
import json
import ssl
import sys

CERT_DIR, NODES, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
PREFIX = "/api/v1/nodes/"


def load():
    with open(NODES) as f:
        return json.load(f)


def save(nodes):
    with open(NODES + ".tmp", "w") as f:
        json.dump(nodes, f)
    import os
    os.replace(NODES + ".tmp", NODES)


def node_object(name, labels):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "resourceVersion": "1"}}


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

    def not_found(self, name):
        self.reply(404, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": f'nodes "{name}" not found',
                         "reason": "NotFound", "details": {"name": name, "kind": "nodes"},
                         "code": 404})

    def do_GET(self):
        self.record(None)
        name = self.path.split("?")[0][len(PREFIX):]
        if not self.path.startswith(PREFIX):
            return self.not_found(self.path)
        nodes = load()
        if name not in nodes:
            return self.not_found(name)
        self.reply(200, node_object(name, nodes[name]))

    def do_PATCH(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"null")
        self.record(body)
        name = self.path.split("?")[0][len(PREFIX):]
        if self.headers.get("Content-Type") != "application/strategic-merge-patch+json":
            return self.reply(415, {"kind": "Status", "code": 415, "message": "unsupported"})
        nodes = load()
        if not self.path.startswith(PREFIX) or name not in nodes:
            return self.not_found(name)
        for key, value in ((body or {}).get("metadata", {}).get("labels") or {}).items():
            if value is None:
                nodes[name].pop(key, None)
            else:
                nodes[name][key] = value
        save(nodes)
        self.reply(200, node_object(name, nodes[name]))


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(f"{CERT_DIR}/server.crt", f"{CERT_DIR}/server.key")
context.load_verify_locations(f"{CERT_DIR}/ca.crt")
context.verify_mode = ssl.CERT_REQUIRED
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
