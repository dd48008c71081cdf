"""The local AWS emulator for the tests, the demo and the benchmark: moto's own server
application, unchanged, behind a thin WSGI layer that records every AWS request (service and
operation) so tests and benchmarks can count API calls, and makes the emulator behave as AWS
does where moto is lenient. It binds 127.0.0.1 on a free port and prints `PORT <n>` once it is
listening.

Where moto is lenient, this layer answers as AWS does (always on):
  - AttachVolume of a volume that is attached already: VolumeInUse (moto attaches it again).
  - A Route53 change batch over 32 000 characters of record values, an UPSERT counting twice:
    InvalidChangeBatch (moto checks the 1 000 records only).
  - Route53 CREATE of a record set identical to one that was created and then deleted: moto
    answers "already exists" whenever any record sorts after it in the zone (it looks for the
    name from that point on, not for the name itself); AWS creates it. The layer lets the
    CREATE through when the name and type do not exist (`allow_recreate_after_delete`).

Extra endpoints (not AWS):
  GET  /_protokube/requests         -> JSON list of {"service": ..., "operation": ...,
                                       "overlapping": [operations still unanswered when it
                                       arrived]}, with "denied": true where IAM (below) refused
                                       it (a client that issues calls concurrently shows in
                                       "overlapping")
  POST /_protokube/requests/reset   -> forget the recorded requests
  POST /_protokube/iam              -> body {"enforce": true|false}: evaluate IAM as AWS does
       where moto cannot. moto enforces EC2 actions (after `POST /moto-api/reset-auth`) against
       resource `*` only and ignores Condition blocks, and its Route53 rejects every signed
       request under enforcement. So this layer evaluates, from the caller's own policy
       documents (inline policies of its user or assumed role, read from moto): AttachVolume,
       DetachVolume, CreateTags and DeleteTags against the volume's and the instance's ARNs and
       tags (aws:ResourceTag/*, aws:RequestTag/*, ec2:CreateAction, StringEquals and Null), then
       lets the request through moto's own check; and every Route53 request against its action
       and its zone or change ARN. A denial answers as AWS does: EC2 `UnauthorizedOperation`
       with only an encoded message (the action is not named), Route53 `AccessDenied`.
  POST /_protokube/faults           -> body: JSON list of fault rules, replacing the current ones.
       Every rule has "match": a substring of the operation (e.g. "AttachVolume", "/rrset").
       - {"code": "Throttling", "status": 400, "message": "...", "style": "query|rest",
          "count": N | "rate": P}: the next N matching requests (or each with probability P)
          get that AWS error instead of an answer (`query` style for EC2, `rest` for Route53).
          With "after": true the request is served first and its answer replaced by the error
          (an operation that succeeded, its answer lost: the SDK retries it).
       - {"delay": S}: matching requests are slow (answered or not).
       - {"stuck_attaching": "vol-…"}: DescribeVolumes shows the volume's attachment as
          `attaching`, begun ten minutes ago (or "attached_ago": S seconds ago). With
          "clock_skew": S the emulated EC2's clock is S seconds off the machine's: the attach
          time and the answer's `Date` header are both on EC2's clock.
       - {"detaching_shadow": {"volume": "vol-…", "instance": "i-…"}, "count": N}: the next N
          DescribeVolumes answers showing the volume attached add that instance's `detaching`
          attachment beside it (a stale read of the previous owner).
       - {"empty_pages": N}: a listing (DescribeVolumes, DescribeInstances) answers N empty
          pages, each with a NextToken, before the real one.
       Faulted requests are recorded too, so tests can count retries.
moto's own `POST /moto-api/reset` still resets all emulated state.
"""

import email.utils
import fnmatch
import io
import json
import random
import re
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

ROUTE53_MAX_CHARS = 32000
EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15"

QUERY_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code>'
    "<Message>%s</Message></Error></Errors><RequestID>fault</RequestID></Response>"
)
REST_ERROR = (
    '<?xml version="1.0"?><ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">'
    "<Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>"
    "<RequestId>fault</RequestId></ErrorResponse>"
)


def route53_batch_chars(body):
    """Characters of record values in a ChangeResourceRecordSets body (UPSERT counted twice)."""
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


def error_response(start_response, status, code, message, style):
    template = REST_ERROR if style == "rest" else QUERY_ERROR
    body = (template % (code, message)).encode()
    start_response(
        "%d Error" % status,
        [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))],
    )
    return [body]


def credential(environ):
    """(access key id, region, service) of a signed request."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if "Credential=" not in auth:
        return None, None, "unknown"
    parts = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/")
    if len(parts) < 4:
        return None, None, "unknown"
    return parts[0], parts[2], parts[3]


# --- IAM evaluation (what moto cannot judge) ----------------------------------------------------


def caller_policies(environ):
    """The policy documents of the caller (its user's or its assumed role's inline and attached
    policies), read from moto's IAM."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.iam.access_control import create_access_key

    access_key_id, _, _ = credential(environ)
    headers = {
        key[5:].replace("_", "-").title(): value
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    key = create_access_key(
        account_id=DEFAULT_ACCOUNT_ID, partition="aws", access_key_id=access_key_id, headers=headers
    )
    documents = []
    for policy in key.collect_policies():
        document = policy if isinstance(policy, str) else getattr(policy, "document", "{}")
        documents.append(json.loads(document) if isinstance(document, str) else document)
    return documents


def listed(value):
    return value if isinstance(value, list) else [value]


def condition_holds(condition, resource_tags, context):
    for operator, tests in condition.items():
        for key, expected in tests.items():
            if key.startswith("aws:ResourceTag/"):
                actual = resource_tags.get(key.split("/", 1)[1])
            elif key.startswith("aws:RequestTag/"):
                actual = context.get("request_tags", {}).get(key.split("/", 1)[1])
            elif key == "ec2:CreateAction":
                actual = context.get("create_action")
            else:
                return False
            if operator == "StringEquals":
                if actual is None or actual not in listed(expected):
                    return False
            elif operator == "Null":
                if (actual is None) != (str(listed(expected)[0]).lower() == "true"):
                    return False
            else:
                return False
    return True


def permitted(policies, action, resources, context):
    """Whether `action` is allowed on every (arn, tags) of `resources`: some Allow statement
    matching action, resource and conditions, and no such Deny."""
    for arn, tags in resources:
        allowed = False
        for document in policies:
            for statement in listed(document.get("Statement", [])):
                actions = [a.lower() for a in listed(statement.get("Action", []))]
                if not any(fnmatch.fnmatchcase(action.lower(), a) for a in actions):
                    continue
                patterns = listed(statement.get("Resource", []))
                if not any(fnmatch.fnmatchcase(arn, p) for p in patterns):
                    continue
                if not condition_holds(statement.get("Condition", {}), tags, context):
                    continue
                if statement.get("Effect") == "Deny":
                    return False
                allowed = True
        if not allowed:
            return False
    return True


def ec2_backend(region):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    return ec2_backends[DEFAULT_ACCOUNT_ID][region]


def ec2_resources(region, ids):
    """(ARN, tags) of EC2 resources by id."""
    from moto.core import DEFAULT_ACCOUNT_ID

    backend = ec2_backend(region)
    kinds = {"vol-": "volume", "i-": "instance", "snap-": "snapshot", "sg-": "security-group"}
    out = []
    for resource_id in ids:
        kind = next((k for p, k in kinds.items() if resource_id.startswith(p)), "resource")
        arn = "arn:aws:ec2:%s:%s:%s/%s" % (region, DEFAULT_ACCOUNT_ID, kind, resource_id)
        out.append((arn, dict(backend.tags.get(resource_id, {}))))
    return out


def request_tags(form):
    tags = {}
    for key, values in form.items():
        match = re.fullmatch(r"Tag\.(\d+)\.Key", key)
        if match:
            tags[values[0]] = form.get("Tag.%s.Value" % match.group(1), [""])[0]
    return tags


ROUTE53_ACTIONS = [
    ("GET", r"/2013-04-01/hostedzone/?", "ListHostedZones", None),
    ("POST", r"/2013-04-01/hostedzone/?", "CreateHostedZone", None),
    ("GET", r"/2013-04-01/hostedzonesbyname/?", "ListHostedZonesByName", None),
    ("GET", r"/2013-04-01/hostedzone/([^/]+)/rrset/?", "ListResourceRecordSets", "hostedzone"),
    ("POST", r"/2013-04-01/hostedzone/([^/]+)/rrset/?", "ChangeResourceRecordSets", "hostedzone"),
    ("GET", r"/2013-04-01/hostedzone/([^/]+)/?", "GetHostedZone", "hostedzone"),
    ("DELETE", r"/2013-04-01/hostedzone/([^/]+)/?", "DeleteHostedZone", "hostedzone"),
    ("GET", r"/2013-04-01/change/([^/]+)/?", "GetChange", "change"),
    ("GET", r"/2013-04-01/tags/hostedzone/([^/]+)/?", "ListTagsForResource", "hostedzone"),
]


def route53_action(method, path):
    """(action, resource ARN) of a Route53 request."""
    for verb, pattern, action, kind in ROUTE53_ACTIONS:
        match = re.fullmatch(pattern, path)
        if verb == method and match:
            if kind is None:
                return action, "*"
            return action, "arn:aws:route53:::%s/%s" % (kind, match.group(1))
    return None, "*"


# --- The application ----------------------------------------------------------------------------


class RecordingApp:
    def __init__(self, inner):
        self.inner = inner
        self.lock = threading.Lock()
        # Requests are served one at a time while IAM is evaluated here (a request let through
        # moto's own check must not let another through with it).
        self.serve_lock = threading.RLock()
        self.requests = []
        # Requests arrived and not yet answered.
        self.in_flight = []
        self.faults = []
        self.enforce_iam = False

    def matching(self, operation):
        with self.lock:
            return [rule for rule in self.faults if rule["match"] in operation]

    def fault_for(self, operation, after):
        """The error rule that fails this request, if any; sleeps for matching slow rules first."""
        delay = 0.0
        chosen = None
        with self.lock:
            for rule in self.faults:
                if rule["match"] not in operation:
                    continue
                delay = max(delay, float(rule.get("delay", 0)))
                if chosen is not None or "code" not in rule or bool(rule.get("after")) != after:
                    continue
                if "rate" in rule:
                    if random.random() < float(rule["rate"]):
                        chosen = rule
                elif rule.get("count", 0) > 0:
                    rule["count"] -= 1
                    chosen = rule
        if delay and not after:
            time.sleep(delay)
        return chosen

    def control(self, path, environ, start_response):
        """The layer's own endpoints; None for anything else."""
        def ok(body=b"ok", kind="text/plain"):
            start_response("200 OK", [("Content-Type", kind), ("Content-Length", str(len(body)))])
            return [body]

        length = int(environ.get("CONTENT_LENGTH") or 0)
        if path == "/_protokube/requests":
            with self.lock:
                body = json.dumps(self.requests).encode()
            return ok(body, "application/json")
        if path == "/_protokube/requests/reset":
            with self.lock:
                self.requests.clear()
            return ok()
        if path == "/_protokube/faults":
            rules = json.loads(environ["wsgi.input"].read(length) or b"[]")
            with self.lock:
                self.faults = rules
            return ok()
        if path == "/_protokube/iam":
            config = json.loads(environ["wsgi.input"].read(length) or b"{}")
            self.enforce_iam = bool(config.get("enforce"))
            return ok()
        return None

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        answer = self.control(path, environ, start_response)
        if answer is not None:
            return answer
        if path.startswith("/moto-api"):
            return self.inner(environ, start_response)
        operation, form, entry = self.record(environ)
        try:
            with self.serve_lock:
                return self.serve(environ, start_response, operation, form, entry)
        finally:
            with self.lock:
                self.in_flight.remove(entry)

    def serve(self, environ, start_response, operation, form, entry):
        _, region, service = credential(environ)
        body = environ["wsgi.input"].getvalue()
        if operation.startswith("POST") and operation.endswith("/rrset"):
            if route53_batch_chars(body) > ROUTE53_MAX_CHARS:
                return error_response(
                    start_response, 400, "InvalidChangeBatch",
                    "Number of characters limit of 32000 exceeded.", "rest")
        rule = self.fault_for(operation, after=False)
        if rule is not None:
            return error_response(
                start_response, int(rule.get("status", 400)), rule["code"],
                rule.get("message", "injected fault"), rule.get("style", "query"))
        bypass_moto_iam = False
        if self.enforce_iam:
            denial, bypass_moto_iam = self.iam_denial(environ, service, region, operation, form)
            if denial is not None:
                status, code, message, style = denial
                with self.lock:
                    entry["denied"] = True
                return error_response(start_response, status, code, message, style)
        if service == "ec2" and operation == "AttachVolume":
            volume = ec2_backend(region).volumes.get(form.get("VolumeId", [""])[0])
            if volume is not None and volume.attachment is not None:
                return error_response(
                    start_response, 400, "VolumeInUse",
                    "%s is already attached to an instance" % volume.id, "query")
        if operation in ("DescribeVolumes", "DescribeInstances"):
            pages = self.empty_page(operation, form)
            if pages is not None:
                return self.answer(start_response, "200 OK", pages)
            environ = self.strip_token(environ, form)
        status, headers, chunks = self.call_inner(environ, bypass_moto_iam)
        if status.startswith("403"):
            # moto's own EC2 enforcement refused it.
            with self.lock:
                entry["denied"] = True
        after = self.fault_for(operation, after=True)
        if after is not None:
            return error_response(
                start_response, int(after.get("status", 503)), after["code"],
                after.get("message", "injected fault"), after.get("style", "query"))
        if operation == "DescribeVolumes" and status.startswith("200"):
            chunks = [self.rewrite_volumes(b"".join(chunks))]
            headers = [(k, v) for k, v in headers if k.lower() not in ("content-length", "date")]
            headers.append(("Content-Length", str(len(chunks[0]))))
            # The answer's date on EC2's clock, as AWS sends it.
            skew = max((r.get("clock_skew", 0) for r in self.matching("DescribeVolumes")),
                       key=abs, default=0)
            headers.append(("Date", email.utils.formatdate(time.time() + skew, usegmt=True)))
        start_response(status, headers)
        return chunks

    def call_inner(self, environ, bypass_moto_iam):
        captured = {}

        def start(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers

        if bypass_moto_iam:
            from moto.core.authorization import disable_iam_authentication

            with disable_iam_authentication():
                chunks = list(self.inner(environ, start))
        else:
            chunks = list(self.inner(environ, start))
        return captured["status"], captured["headers"], chunks

    @staticmethod
    def answer(start_response, status, body):
        start_response(status, [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
        return [body]

    # IAM -----------------------------------------------------------------------------------

    def iam_denial(self, environ, service, region, operation, form):
        """(denial or None, whether moto's own check is to be skipped)."""
        if service == "route53":
            action, arn = route53_action(environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            if action is None:
                return None, False
            if permitted(caller_policies(environ), "route53:" + action, [(arn, {})], {}):
                # Judged here: moto's Route53 rejects any signed request under enforcement.
                return None, True
            return (403, "AccessDenied",
                    "User is not authorized to perform: route53:%s on resource: %s" % (action, arn),
                    "rest"), False
        if service != "ec2" or operation not in (
                "AttachVolume", "DetachVolume", "CreateTags", "DeleteTags"):
            return None, False
        if operation in ("AttachVolume", "DetachVolume"):
            ids = [form.get("VolumeId", [""])[0]] + form.get("InstanceId", [])
        else:
            ids = [v[0] for k, v in form.items() if re.fullmatch(r"ResourceId\.\d+", k)]
        context = {"request_tags": request_tags(form) if operation.endswith("Tags") else {}}
        resources = ec2_resources(region, ids)
        if permitted(caller_policies(environ), "ec2:" + operation, resources, context):
            return None, True
        return (403, "UnauthorizedOperation",
                "You are not authorized to perform this operation. Encoded authorization "
                "failure message: %08x" % random.getrandbits(32), "query"), False

    # Rewritten answers ---------------------------------------------------------------------

    def empty_page(self, operation, form):
        """An empty page with a NextToken while a rule asks for empty pages first."""
        for rule in self.matching(operation):
            if "empty_pages" not in rule:
                continue
            token = form.get("NextToken", [""])[0]
            served = int(token[len("empty-"):]) if token.startswith("empty-") else 0
            if served >= int(rule["empty_pages"]):
                return None
            kind = "volumeSet" if operation == "DescribeVolumes" else "reservationSet"
            return (
                '<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="%s">'
                "<requestId>empty</requestId><%s/><nextToken>empty-%d</nextToken></%sResponse>"
                % (operation, EC2_NS, kind, served + 1, operation)
            ).encode()
        return None

    @staticmethod
    def strip_token(environ, form):
        """The last of a rule's empty pages leads to moto's first page."""
        token = form.get("NextToken", [""])[0]
        if not token.startswith("empty-"):
            return environ
        form = {k: v for k, v in form.items() if k != "NextToken"}
        body = urllib.parse.urlencode(form, doseq=True).encode()
        environ = dict(environ)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return environ

    def rewrite_volumes(self, body):
        rules = self.matching("DescribeVolumes")
        if not any("stuck_attaching" in r or "detaching_shadow" in r for r in rules):
            return body
        root = ET.fromstring(body)
        namespace = root.tag[1:].split("}")[0] if root.tag.startswith("{") else ""
        ET.register_namespace("", namespace)
        ns = {"e": namespace}
        for item in root.findall("./e:volumeSet/e:item", ns):
            volume_id = item.findtext("e:volumeId", "", ns)
            attachments = item.find("e:attachmentSet", ns)
            for rule in rules:
                if rule.get("stuck_attaching") == volume_id and attachments is not None:
                    begun = time.time() + rule.get("clock_skew", 0) - rule.get("attached_ago", 600)
                    old = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(begun))
                    for attachment in attachments.findall("e:item", ns):
                        attachment.find("e:status", ns).text = "attaching"
                        attachment.find("e:attachTime", ns).text = old
                shadow = rule.get("detaching_shadow")
                attached = attachments is not None and attachments.find("e:item", ns) is not None
                if shadow and shadow["volume"] == volume_id and attached:
                    with self.lock:
                        if rule.get("count", 0) <= 0:
                            continue
                        rule["count"] -= 1
                    extra = ET.SubElement(attachments, "{%s}item" % namespace)
                    for tag, text in [("volumeId", volume_id), ("instanceId", shadow["instance"]),
                                      ("device", "/dev/xvdu"), ("status", "detaching"),
                                      ("attachTime", "2024-01-01T00:00:00.000Z")]:
                        ET.SubElement(extra, "{%s}%s" % (namespace, tag)).text = text
        return ET.tostring(root, xml_declaration=True, encoding="UTF-8")

    # Recording -----------------------------------------------------------------------------

    def record(self, environ):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        _, _, service = credential(environ)
        operation = None
        form = {}
        ctype = environ.get("CONTENT_TYPE", "")
        if "x-www-form-urlencoded" in ctype:
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
            operation = (form.get("Action") or [None])[0]
        if operation is None:
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
            operation = (query.get("Action") or [None])[0]
            if operation is not None:
                form = query
        if operation is None:
            operation = "%s %s" % (environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
        entry = {"service": service, "operation": operation}
        with self.lock:
            entry["overlapping"] = [other["operation"] for other in self.in_flight]
            self.in_flight.append(entry)
            self.requests.append(entry)
        return operation, form, entry


def allow_recreate_after_delete():
    """moto's CREATE check (moto 5.x `change_resource_record_sets`) refuses a change that is
    in the zone's journal whenever `get_record_sets(start_name=...)` finds any record from that
    name on; AWS refuses only when that very name and type exist. Before moto's check, such a
    journal entry is dropped when the record set does not exist any more."""
    from moto.route53.models import Route53Backend

    original = Route53Backend.change_resource_record_sets

    def change_resource_record_sets(self, zoneid, change_list):
        zone = self.get_hosted_zone(zoneid)
        for value in change_list:
            if value["Action"] != "CREATE" or value not in zone.rr_changes:
                continue
            name = value["ResourceRecordSet"]["Name"].strip(".")
            kind = value["ResourceRecordSet"]["Type"]
            exists = any(
                r.name.strip(".") == name and r.type == kind for r in zone.rrsets
            )
            if not exists:
                stale = [
                    c
                    for c in zone.rr_changes
                    if c["ResourceRecordSet"]["Name"].strip(".") == name
                    and c["ResourceRecordSet"]["Type"] == kind
                    and c["Action"] == "CREATE"
                    and c == value
                ]
                for change in stale:
                    zone.rr_changes.remove(change)
        return original(self, zoneid, change_list)

    Route53Backend.change_resource_record_sets = change_resource_record_sets


def main():
    allow_recreate_after_delete()
    app = RecordingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    print("PORT %d" % server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
