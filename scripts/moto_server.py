"""The local AWS emulator for the tests, the demo and the benchmark: moto's own server
application, unchanged, behind a thin WSGI layer that records every AWS request (service and
operation) so tests and benchmarks can count API calls. It binds 127.0.0.1 on a free port and
prints `PORT <n>` once it is listening.

Extra endpoints (not AWS):
  GET  /_protokube/requests         -> JSON list of {"service": ..., "operation": ...}
  POST /_protokube/requests/reset   -> forget the recorded requests
  POST /_protokube/faults           -> body: JSON list of fault rules, replacing the current ones:
       {"match": "<substring of the operation>", "count": N, "status": 400,
        "code": "Throttling", "message": "...", "style": "query|rest"}
       The next N requests whose operation contains `match` get that AWS error instead of an
       answer (`query` style for EC2, `rest` style for Route53). With "rate": P instead of a
       count, each matching request fails with probability P, without end. "delay": S (seconds)
       makes matching requests slow (answered or not). Faulted requests are recorded too, so
       tests can count retries.
Route53's limit of 32 000 characters of record values per change batch (an UPSERT counting
twice), which moto does not check, is enforced here as AWS does (InvalidChangeBatch).
moto's own `POST /moto-api/reset` still resets all emulated state.
"""

import io
import json
import random
import sys
import threading
import time
import urllib.parse

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server


# Route53 limits moto does not enforce (it checks the 1 000 records, not the characters):
# a change batch holds at most 32 000 characters of record values, an UPSERT counting twice.
ROUTE53_MAX_CHARS = 32000


def route53_batch_chars(body):
    """Characters of record values in a ChangeResourceRecordSets body (UPSERT counted twice)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return 0
    total = 0
    for change in root.iter():
        if not change.tag.endswith("}Change") and change.tag != "Change":
            continue
        action = next((c.text for c in change if c.tag.endswith("Action")), "")
        values = [v.text or "" for v in change.iter() if v.tag.endswith("Value")]
        total += sum(len(v) for v in values) * (2 if action == "UPSERT" else 1)
    return total


QUERY_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code>'
    "<Message>%s</Message></Error></Errors><RequestID>fault</RequestID></Response>"
)
REST_ERROR = (
    '<?xml version="1.0"?><ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">'
    "<Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>"
    "<RequestId>fault</RequestId></ErrorResponse>"
)


class RecordingApp:
    def __init__(self, inner):
        self.inner = inner
        self.lock = threading.Lock()
        self.requests = []
        self.faults = []

    def fault_for(self, operation):
        """The rule that fails this request, if any; sleeps for matching slow rules first."""
        delay = 0.0
        chosen = None
        with self.lock:
            for rule in self.faults:
                if rule["match"] not in operation:
                    continue
                delay = max(delay, float(rule.get("delay", 0)))
                if chosen is not None or "code" not in rule:
                    continue
                if "rate" in rule:
                    if random.random() < float(rule["rate"]):
                        chosen = rule
                elif rule.get("count", 0) > 0:
                    rule["count"] -= 1
                    chosen = rule
        if delay:
            time.sleep(delay)
        return chosen

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/_protokube/requests":
            with self.lock:
                body = json.dumps(self.requests).encode()
            start_response(
                "200 OK",
                [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
            )
            return [body]
        if path == "/_protokube/requests/reset":
            with self.lock:
                self.requests.clear()
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
            return [b"ok"]
        if path == "/_protokube/faults":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            rules = json.loads(environ["wsgi.input"].read(length) or b"[]")
            with self.lock:
                self.faults = rules
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
            return [b"ok"]
        if not path.startswith("/moto-api"):
            operation = self.record(environ)
            if operation.startswith("POST") and operation.endswith("/rrset"):
                length = int(environ.get("CONTENT_LENGTH") or 0)
                body = environ["wsgi.input"].read(length)
                environ["wsgi.input"] = io.BytesIO(body)
                if route53_batch_chars(body) > ROUTE53_MAX_CHARS:
                    rule = {"code": "InvalidChangeBatch", "style": "rest", "status": 400,
                            "message": "Number of characters limit of 32000 exceeded."}
                    body = (REST_ERROR % (rule["code"], rule["message"])).encode()
                    start_response("400 Error", [("Content-Type", "text/xml"),
                                                 ("Content-Length", str(len(body)))])
                    return [body]
            rule = self.fault_for(operation)
            if rule is not None:
                template = REST_ERROR if rule.get("style") == "rest" else QUERY_ERROR
                body = (template % (rule["code"], rule.get("message", "injected fault"))).encode()
                status = int(rule.get("status", 400))
                start_response(
                    "%d %s" % (status, "Error"),
                    [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))],
                )
                return [body]
        return self.inner(environ, start_response)

    def record(self, environ):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        auth = environ.get("HTTP_AUTHORIZATION", "")
        service = "unknown"
        if "Credential=" in auth:
            # Credential=AKID/20240101/us-east-1/ec2/aws4_request
            parts = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/")
            if len(parts) >= 4:
                service = parts[3]
        operation = None
        ctype = environ.get("CONTENT_TYPE", "")
        if "x-www-form-urlencoded" in ctype:
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
            operation = (form.get("Action") or [None])[0]
        if operation is None:
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
            operation = (query.get("Action") or [None])[0]
        if operation is None:
            operation = "%s %s" % (environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
        with self.lock:
            self.requests.append({"service": service, "operation": operation})
        return operation


def main():
    app = RecordingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    print("PORT %d" % server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
