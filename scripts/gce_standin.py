"""A stand-in for Google Compute Engine's metadata server, Compute Engine v1 and Cloud DNS v1,
for the tests of protokube on GCE (no emulator exists for them). It speaks what protokube asks of
the real services, checked against Google's own discovery documents (`compute.v1.json`,
`dns.v1.json`, as PyPI's google-api-python-client ships them):

  * every request must be a method of the discovery documents (HTTP method and path template),
    with only that method's query parameters (or the documents' global ones), every path
    parameter, and a body whose fields are all in the method's request schema (recursively);
  * every answer's fields are in the method's response schema;
  * a request that breaks either is answered 400 and written to the violations log, which the
    tests require to be empty.

  api CERT_DIR STATE LOG DISCOVERY_DIR
      HTTPS on 127.0.0.1 with CERT_DIR/server.{crt,key}; `Authorization: Bearer
      ya29.standin.<instance>[.<generation>]` of an instance of the state, else 401 (also for a
      generation the state lists as revoked). Serves, under
      /compute/v1/ and /dns/v1/: disks.list, disks.aggregatedList, disks.get, disks.setLabels
      (412 conditionNotMet for a stale labelFingerprint), instances.get, instances.aggregatedList,
      instances.attachDisk (400 resourceInUseByAnotherResource for a disk in use elsewhere, read-
      write; the attachment itself made when its zone operation is done, which then fails with
      RESOURCE_IN_USE_BY_ANOTHER_RESOURCE if someone attached it first), instances.detachDisk,
      zoneOperations.get/wait (`wait` holds until the operation is done, up to two minutes, as
      Google documents), managedZones.list/get, resourceRecordSets.list (by name and type),
      changes.create (all or nothing: 409 alreadyExists for an addition that exists, 404
      notFound for a deletion of a set that does not exist, 412 conditionNotMet for one that is
      not exactly what is held), changes.get. The mutating Compute methods honour `requestId`
      (a request repeated with the same id answers the first one's operation and does nothing
      again). List filters: `labels.<key>="<value>"` (or unquoted), the form protokube sends.
      Instances hold their disks as Compute Engine shows them: the boot disk (`boot: true`,
      device `persistent-disk-0` unless the state names another), each attachment's own
      `deviceName` and `mode`; network tags in `tags.items`; regional disks under
      `regions/<region>` scopes.
  metadata INSTANCE STATE LOG [READY_AFTER] [ADDRESS PORT]
      HTTP on ADDRESS:PORT (default 127.0.0.1, any port): /computeMetadata/v1/... of instance
      INSTANCE (403 without `Metadata-Flavor: Google`; answers carry it), its network tags at
      `instance/tags` as a JSON list, and a new access token generation at each token request;
      503 until READY_AFTER seconds have passed.

The state is one JSON file (project, instances, disks, operations, managed zones and their
record sets, changes, and injections a test sets: `attach_race` {disk: {by, when: at_once |
in_operation}}, `label_race` [disk], `dns_race` [{zone, rrset} | {zone, remove: "name|type"}],
`pending_polls`, `denied` [IAM permission], `revoked_tokens` {instance: [generation]},
`rate_limited_for` {method id: seconds} (403 rateLimitExceeded for every call of the method
in the `seconds` after its first call; the refusals' times in `rate_limit_refusals`),
`rate_limited` {method id: n} (403 rateLimitExceeded n times, Compute Engine's rate quota
answer), `not_ready` {disk: n} (attachDisk answered 400 resourceNotReady n times: a disk still
detaching), `operation_seconds` (how long an operation stays RUNNING: seconds, or {operation type: seconds}), `lost_answers` {method
id: n} (the request is carried out, then answered 503, n times)), read and written under a lock
on every request, so tests seed and read it
while servers run and several protokube runs share one world. Every request is appended to LOG
as a JSON line (server, caller, method, path, query, status, API method id). Prints
`PORT <n>` when it listens.
"""

import fcntl
import hashlib
import http.server
import json
import os
import re
import ssl
import sys
import threading
import time
import urllib.parse

MODE = sys.argv[1]
LOCK = threading.Lock()


def load_state(path):
    with open(path) as f:
        return json.load(f)


class State:
    """The shared world, locked across processes for one request."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        LOCK.acquire()
        self.lock_file = open(self.path + ".lock", "w")
        fcntl.flock(self.lock_file, fcntl.LOCK_EX)
        self.data = load_state(self.path)
        return self.data

    def __exit__(self, *exc):
        # An error answer keeps what happened before it (another writer's change that made
        # the request fail stays made).
        if exc[0] is None or issubclass(exc[0], Answer):
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        fcntl.flock(self.lock_file, fcntl.LOCK_UN)
        self.lock_file.close()
        LOCK.release()
        return False


def append(path, record):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(record, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------------------------
# The discovery documents: methods, and the check of requests and answers against them.


class Discovery:
    def __init__(self, directory):
        self.methods = []
        self.schemas = {}
        for name in ("compute.v1.json", "dns.v1.json"):
            with open(os.path.join(directory, name)) as f:
                doc = json.load(f)
            api = doc["name"]
            self.schemas[api] = doc["schemas"]
            global_params = set(doc.get("parameters", {}))
            for method in self.walk(doc.get("resources", {})):
                template = "/" + doc["servicePath"] + method["path"]
                pattern = "^"
                for literal, plus, name in re.findall(r"([^{]*)(?:\{(\+?)([^}]+)\})?", template):
                    pattern += re.escape(literal)
                    if name:
                        pattern += "(?P<%s>%s)" % (name.replace("-", "_"), ".+" if plus else "[^/]+")
                pattern += "$"
                self.methods.append({
                    "id": method["id"],
                    "literal": len(re.sub(r"\{[^}]*\}", "", template)),
                    "api": api,
                    "http": method["httpMethod"],
                    "regex": re.compile(pattern),
                    "params": method.get("parameters", {}),
                    "global": global_params,
                    "request": method.get("request", {}).get("$ref"),
                    "response": method.get("response", {}).get("$ref"),
                })

    def walk(self, resources):
        for resource in resources.values():
            yield from resource.get("methods", {}).values()
            yield from self.walk(resource.get("resources", {}))

    def match(self, http_method, path):
        """The method whose template matches, the most specific (most literal text) first."""
        found = [(method, m) for method in self.methods
                 for m in [method["regex"].match(path)]
                 if m and method["http"] == http_method]
        if not found:
            return None, None
        method, m = max(found, key=lambda f: f[0]["literal"])
        return method, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}

    def check_query(self, method, query):
        problems = []
        for key in query:
            if key not in method["params"] and key not in method["global"]:
                problems.append("query parameter `%s` is not one of %s's" % (key, method["id"]))
        for name, param in method["params"].items():
            if param.get("required") and param.get("location") == "query" and name not in query:
                problems.append("required query parameter `%s` of %s is missing" % (name, method["id"]))
        return problems

    def check_value(self, api, schema, value, where):
        """The fields of `value` not in `schema` (a schema object or a $ref)."""
        if "$ref" in schema:
            schema = self.schemas[api][schema["$ref"]]
        problems = []
        kind = schema.get("type")
        if isinstance(value, dict):
            if "properties" in schema:
                for key, item in value.items():
                    if key not in schema["properties"]:
                        problems.append("`%s.%s` is not a field of the schema" % (where, key))
                    else:
                        problems += self.check_value(api, schema["properties"][key], item,
                                                     where + "." + key)
            elif "additionalProperties" in schema:
                for key, item in value.items():
                    problems += self.check_value(api, schema["additionalProperties"], item,
                                                 "%s[%s]" % (where, key))
            elif kind not in (None, "object", "any"):
                problems.append("`%s` is an object, the schema says %s" % (where, kind))
        elif isinstance(value, list):
            if kind != "array":
                problems.append("`%s` is a list, the schema says %s" % (where, kind))
            else:
                for i, item in enumerate(value):
                    problems += self.check_value(api, schema.get("items", {}), item,
                                                 "%s[%d]" % (where, i))
        elif value is not None and kind in ("object", "array"):
            problems.append("`%s` is a scalar, the schema says %s" % (where, kind))
        return problems


# ---------------------------------------------------------------------------------------------
# Errors and shapes.


class Answer(Exception):
    def __init__(self, status, body):
        self.status = status
        self.body = body


class Hold(Exception):
    """A `zoneOperations.wait` to answer once operation `name` is done, or at `until`."""

    def __init__(self, name, until):
        self.name = name
        self.until = until


def error(status, reason, message, state_status=None):
    body = {"error": {"code": status, "message": message,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}
    if state_status:
        body["error"]["status"] = state_status
    return Answer(status, body)


def fingerprint(labels):
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]


def labels_match(filter_text, labels):
    if filter_text is None:
        return True
    m = re.fullmatch(r'labels\.([a-z0-9_-]+)\s*=\s*"?([a-z0-9_-]*)"?', filter_text or "")
    if not m:
        raise error(400, "invalid", "the stand-in understands `labels.<key>=\"<value>\"` "
                    "filters only, not `%s`" % filter_text)
    return labels.get(m.group(1)) == m.group(2)


class Api:
    def __init__(self, state_path, discovery):
        self.state_path = state_path
        self.discovery = discovery

    def base(self, data):
        return "https://compute.googleapis.com/compute/v1/projects/%s" % data["project"]

    def disk_url(self, data, key):
        disk = data["disks"][key]
        name = disk.get("name", key)
        if "region" in disk:
            return "%s/regions/%s/disks/%s" % (self.base(data), disk["region"], name)
        return "%s/zones/%s/disks/%s" % (self.base(data), disk["zone"], name)

    def disk_json(self, data, key):
        disk = data["disks"][key]
        name = disk.get("name", key)
        out = {"kind": "compute#disk", "name": name, "id": disk.get("id", "1%08d" % (abs(hash(name)) % 10**8)),
               "selfLink": self.disk_url(data, name),
               "status": disk.get("status", "READY"), "sizeGb": str(disk.get("sizeGb", 1)),
               "labels": disk.get("labels", {}), "labelFingerprint": fingerprint(disk.get("labels", {}))}
        if "region" in disk:
            out["region"] = "%s/regions/%s" % (self.base(data), disk["region"])
            out["replicaZones"] = ["%s/zones/%s" % (self.base(data), z) for z in disk.get("replicaZones", [])]
            out["type"] = "%s/regions/%s/diskTypes/pd-balanced" % (self.base(data), disk["region"])
        else:
            out["zone"] = "%s/zones/%s" % (self.base(data), disk["zone"])
            out["type"] = "%s/zones/%s/diskTypes/pd-balanced" % (self.base(data), disk["zone"])
        users = ["%s/zones/%s/instances/%s" % (self.base(data), data["instances"].get(u, {}).get("zone", disk.get("zone")), u)
                 for u in disk.get("users", [])]
        if users:
            out["users"] = users
        for key in ("sourceSnapshot", "sourceImage", "sourceDisk", "sourceInstantSnapshot", "sourceMachineImage",
                    "sourceStorageObject", "asyncPrimaryDisk"):
            if disk.get(key):
                out[key] = disk[key]
        return out

    def instance_json(self, data, name):
        inst = data["instances"][name]
        zone = inst["zone"]
        interface = {"kind": "compute#networkInterface", "name": "nic0", "networkIP": inst["ip"],
                     "network": "%s/global/networks/default" % self.base(data)}
        if inst.get("external_ip"):
            interface["accessConfigs"] = [{"kind": "compute#accessConfig", "type": "ONE_TO_ONE_NAT",
                                           "name": "External NAT", "natIP": inst["external_ip"]}]
        # The boot disk first (index 0), then the others in the order they were attached.
        held = [(not disk.get("boot", False), disk.get("attached_at", {}).get(name, 0), disk_name)
                for disk_name, disk in data["disks"].items() if name in disk.get("users", [])]
        disks = []
        for index, (_, _, disk_name) in enumerate(sorted(held)):
            disk = data["disks"][disk_name]
            disks.append({"kind": "compute#attachedDisk", "index": index, "boot": disk.get("boot", False),
                          "autoDelete": disk.get("boot", False),
                          "deviceName": disk.get("devices", {}).get(name, disk.get("name", disk_name)),
                          "source": self.disk_url(data, disk_name),
                          "mode": disk.get("modes", {}).get(name, "READ_WRITE"), "type": "PERSISTENT",
                          "interface": "SCSI"})
        out = {"kind": "compute#instance", "name": name, "id": "2%08d" % (abs(hash(name)) % 10**8),
               "zone": "%s/zones/%s" % (self.base(data), zone),
               "selfLink": "%s/zones/%s/instances/%s" % (self.base(data), zone, name),
               "status": inst.get("status", "RUNNING"), "labels": inst.get("labels", {}),
               "labelFingerprint": fingerprint(inst.get("labels", {})),
               "networkInterfaces": [interface], "disks": disks,
               "metadata": {"kind": "compute#metadata",
                            "items": [{"key": k, "value": v} for k, v in sorted(inst.get("metadata", {}).items())]}}
        if inst.get("tags"):
            out["tags"] = {"items": inst["tags"], "fingerprint": fingerprint(inst["tags"])}
        return out

    def operation(self, data, zone, kind, target, action):
        data["next_op"] = data.get("next_op", 0) + 1
        name = "operation-%d" % data["next_op"]
        op = {"kind": "compute#operation", "name": name, "id": str(1000 + data["next_op"]),
              "zone": "%s/zones/%s" % (self.base(data), zone), "operationType": kind,
              "targetLink": target, "status": "RUNNING", "progress": 0,
              "selfLink": "%s/zones/%s/operations/%s" % (self.base(data), zone, name)}
        seconds = data.get("operation_seconds", 0)
        if isinstance(seconds, dict):
            seconds = seconds.get(kind, 0)
        done_at = time.time() + float(seconds)
        data.setdefault("operations", {})[name] = {"json": op, "action": action, "done_at": done_at}
        return op

    def settle(self, data, name):
        """Applies a pending operation's change once its time has come (`operation_seconds`
        after it began); its JSON, RUNNING until then."""
        entry = data["operations"][name]
        op = entry["json"]
        if op["status"] == "DONE" or time.time() < entry.get("done_at", 0):
            return op
        action = entry["action"]
        op["status"], op["progress"] = "DONE", 100
        if action["do"] == "attach":
            disk = data["disks"][action["disk"]]
            race = data.get("attach_race", {}).pop(action["disk"], None)
            if race and race["when"] == "in_operation":
                disk.setdefault("users", []).append(race["by"])
            others = [u for u in disk.get("users", []) if u != action["instance"]]
            if others:
                op["error"] = {"errors": [{"code": "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE",
                                           "message": "The disk resource '%s' is already being used by '%s'"
                                           % (action["disk"], others[0])}]}
                op["httpErrorStatusCode"], op["httpErrorMessage"] = 400, "BAD REQUEST"
            elif action["instance"] not in disk.get("users", []):
                disk.setdefault("users", []).append(action["instance"])
                disk.setdefault("devices", {})[action["instance"]] = action["device"]
                disk.setdefault("modes", {})[action["instance"]] = action.get("mode", "READ_WRITE")
                disk.setdefault("attached_at", {})[action["instance"]] = data["next_op"]
        elif action["do"] == "detach":
            disk = data["disks"][action["disk"]]
            disk["users"] = [u for u in disk.get("users", []) if u != action["instance"]]
            for held in ("devices", "modes", "attached_at"):
                disk.get(held, {}).pop(action["instance"], None)
        elif action["do"] == "labels":
            data["disks"][action["disk"]]["labels"] = action["labels"]
        return op

    def aggregated(self, data, kind, items_key, names):
        """`names`: (scope, JSON) pairs, a scope being `zones/<zone>` or `regions/<region>`."""
        items = {}
        for scope in sorted(set("zones/" + z for z in data.get("zones_known", [])) | set(n[0] for n in names)):
            members = [n[1] for n in names if n[0] == scope]
            if members:
                items[scope] = {items_key: members}
            else:
                items[scope] = {"warning": {"code": "NO_RESULTS_ON_PAGE",
                                            "message": "There are no results for scope '%s' on this page." % scope}}
        return {"kind": kind, "id": "projects/%s/aggregated/%s" % (data["project"], items_key),
                "items": items, "selfLink": self.base(data) + "/aggregated/" + items_key}

    def handle(self, method, p, query, body, caller):
        mid = method["id"]
        with State(self.state_path) as data:
            for needed in [method_permission(mid)] + extra_permissions(mid):
                if mid in data.get("denied", []) or needed in data.get("denied", []):
                    raise error(403, "forbidden", "Required '%s' permission for 'projects/%s'"
                                % (needed, data["project"]), "PERMISSION_DENIED")
            window = data.get("rate_limited_for", {}).get(mid)
            if window is not None:
                # A per-minute quota spent by a fleet: every call of the method is refused for
                # `window` seconds from the first one, each refusal logged with its time.
                started = data.setdefault("rate_limit_started", {}).setdefault(mid, time.time())
                if time.time() - started < window:
                    data.setdefault("rate_limit_refusals", {}).setdefault(mid, []).append(time.time())
                    raise Answer(403, {"error": {"code": 403, "message": "Rate Limit Exceeded", "errors": [
                        {"message": "Rate Limit Exceeded", "domain": "usageLimits", "reason": "rateLimitExceeded"}]}})
            if data.get("rate_limited", {}).get(mid, 0) > 0:
                # Compute Engine's rate quota answer (cloud.google.com/compute/api-quota): 403,
                # reason rateLimitExceeded, domain usageLimits; "wait a minute, then retry".
                data["rate_limited"][mid] -= 1
                raise Answer(403, {"error": {"code": 403, "message": "Rate Limit Exceeded", "errors": [
                    {"message": "Rate Limit Exceeded", "domain": "usageLimits", "reason": "rateLimitExceeded"}]}})
            if p.get("project") not in (None, data["project"]):
                raise error(404, "notFound", "The resource 'projects/%s' was not found" % p.get("project"))
            request_id = query.get("requestId")
            done = data.get("request_ids", {}).get(request_id) if request_id else None
            if done is not None:
                # The same request again (its answer was lost): Google answers the first one's
                # operation and does not do it twice.
                result = self.settle(data, done) if done in data.get("operations", {}) else done
            else:
                result = self.dispatch(data, mid, p, query, body, caller)
                if request_id and isinstance(result, dict) and result.get("kind") == "compute#operation":
                    data.setdefault("request_ids", {})[request_id] = result["name"]
            if data.get("lost_answers", {}).get(mid, 0) > 0:
                data["lost_answers"][mid] -= 1
                raise error(503, "backendError", "The service is currently unavailable.", "UNAVAILABLE")
            return result

    def hold(self, held):
        """Answers a held `zoneOperations.wait`: the operation once done, or as it stands at
        the end of the hold; the state is locked only to look."""
        while True:
            with State(self.state_path) as data:
                op = self.settle(data, held.name)
            if op["status"] == "DONE" or time.time() >= held.until:
                return op
            time.sleep(0.2)

    def dispatch(self, data, mid, p, query, body, caller):
        disks, instances = data["disks"], data["instances"]
        if mid == "compute.disks.list":
            names = [n for n, d in sorted(disks.items()) if d.get("zone") == p["zone"]
                     and labels_match(query.get("filter"), d.get("labels", {}))]
            return {"kind": "compute#diskList", "items": [self.disk_json(data, n) for n in names],
                    "selfLink": "%s/zones/%s/disks" % (self.base(data), p["zone"])}
        if mid == "compute.disks.aggregatedList":
            names = [("regions/" + d["region"] if "region" in d else "zones/" + d["zone"], self.disk_json(data, n))
                     for n, d in sorted(disks.items()) if labels_match(query.get("filter"), d.get("labels", {}))]
            return self.aggregated(data, "compute#diskAggregatedList", "disks", names)
        if mid == "compute.disks.get":
            found = find_disk(data, p["disk"], p["zone"])
            if found is None:
                raise error(404, "notFound", "The resource 'projects/%s/zones/%s/disks/%s' was not found"
                            % (data["project"], p["zone"], p["disk"]))
            return self.disk_json(data, found)
        if mid == "compute.disks.setLabels":
            name = find_disk(data, p["resource"], p["zone"])
            if name is None:
                raise error(404, "notFound", "The resource 'disks/%s' was not found" % p["resource"])
            disk = disks[name]
            if name in data.get("label_race", []):
                data["label_race"].remove(name)
                disk.setdefault("labels", {})["k8s-io-other-writer"] = "x"
            if body.get("labelFingerprint") != fingerprint(disk.get("labels", {})):
                raise error(412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed",
                            "FAILED_PRECONDITION")
            op = self.operation(data, p["zone"], "setLabels", self.disk_json(data, name)["selfLink"],
                                {"do": "labels", "disk": name, "labels": body.get("labels", {})})
            return self.settle(data, op["name"])
        if mid == "compute.instances.get":
            if p["instance"] not in instances or instances[p["instance"]]["zone"] != p["zone"]:
                raise error(404, "notFound", "The resource 'projects/%s/zones/%s/instances/%s' was not found"
                            % (data["project"], p["zone"], p["instance"]))
            return self.instance_json(data, p["instance"])
        if mid == "compute.instances.aggregatedList":
            names = [("zones/" + i["zone"], self.instance_json(data, n)) for n, i in sorted(instances.items())
                     if labels_match(query.get("filter"), i.get("labels", {}))]
            return self.aggregated(data, "compute#instanceAggregatedList", "instances", names)
        if mid == "compute.instances.attachDisk":
            name = find_disk(data, urllib.parse.urlparse(body.get("source", "")).path.rsplit("/", 1)[-1], p["zone"])
            if name is None:
                raise error(404, "notFound", "The resource '%s' was not found" % body.get("source"))
            if p["instance"] not in instances:
                raise error(404, "notFound", "The resource 'instances/%s' was not found" % p["instance"])
            disk = disks[name]
            if data.get("not_ready", {}).get(name, 0) > 0:
                # A disk still being detached from a deleted or replaced instance.
                data["not_ready"][name] -= 1
                raise error(400, "resourceNotReady", "The resource 'projects/%s/zones/%s/disks/%s' is not ready"
                            % (data["project"], p["zone"], name))
            race = data.get("attach_race", {}).get(name)
            if race and race["when"] == "at_once":
                del data["attach_race"][name]
                disk.setdefault("users", []).append(race["by"])
            others = [u for u in disk.get("users", []) if u != p["instance"]]
            if p["instance"] in disk.get("users", []):
                raise error(400, "invalid", "The disk resource 'projects/%s/zones/%s/disks/%s' is already being used by "
                            "'projects/%s/zones/%s/instances/%s'" % (data["project"], p["zone"], name,
                                                                    data["project"], p["zone"], p["instance"]))
            if others and (body.get("mode", "READ_WRITE") == "READ_WRITE"
                           or any(m == "READ_WRITE" for u, m in disk.get("modes", {}).items() if u in others)):
                raise error(400, "resourceInUseByAnotherResource",
                            "The disk resource 'projects/%s/zones/%s/disks/%s' is already being used by "
                            "'projects/%s/zones/%s/instances/%s'" % (data["project"], p["zone"], name,
                                                                    data["project"], p["zone"], others[0]))
            return self.operation(data, p["zone"], "attachDisk",
                                  self.instance_json(data, p["instance"])["selfLink"],
                                  {"do": "attach", "disk": name, "instance": p["instance"],
                                   "device": body.get("deviceName") or "persistent-disk-%d" % len(
                                       [d for d in disks.values() if p["instance"] in d.get("users", [])]),
                                   "mode": body.get("mode", "READ_WRITE")})
        if mid == "compute.instances.detachDisk":
            device = query.get("deviceName")
            for name, disk in disks.items():
                if p["instance"] in disk.get("users", []) and \
                        disk.get("devices", {}).get(p["instance"], disk.get("name", name)) == device:
                    return self.operation(data, p["zone"], "detachDisk",
                                          self.instance_json(data, p["instance"])["selfLink"],
                                          {"do": "detach", "disk": name, "instance": p["instance"]})
            raise error(400, "invalid", "No attached disk found with device name '%s'" % device)
        if mid in ("compute.zoneOperations.get", "compute.zoneOperations.wait"):
            if p["operation"] not in data.get("operations", {}):
                raise error(404, "notFound", "The resource 'operations/%s' was not found" % p["operation"])
            if mid == "compute.zoneOperations.wait":
                # Held (the state unlocked meanwhile) until the operation is done, two minutes
                # at most, as Google documents `wait`.
                raise Hold(p["operation"], time.time() + 120)
            return self.settle(data, p["operation"])
        if mid == "dns.managedZones.list":
            return {"kind": "dns#managedZonesListResponse",
                    "managedZones": [zone_json(zid, z) for zid, z in sorted(data["managed_zones"].items())]}
        if mid == "dns.managedZones.get":
            zid = find_zone(data, p["managedZone"])
            return zone_json(zid, data["managed_zones"][zid])
        if mid == "dns.resourceRecordSets.list":
            zone = data["managed_zones"][find_zone(data, p["managedZone"])]
            sets = [s for s in zone["rrsets"].values()
                    if ("name" not in query or s["name"] == query["name"])
                    and ("type" not in query or s["type"] == query["type"])]
            return {"kind": "dns#resourceRecordSetsListResponse",
                    "rrsets": sorted(sets, key=lambda s: (s["name"], s["type"]))}
        if mid == "dns.changes.create":
            zid = find_zone(data, p["managedZone"])
            zone = data["managed_zones"][zid]
            for race in [r for r in data.get("dns_race", []) if r["zone"] == zid]:
                data["dns_race"].remove(race)
                if "remove" in race:
                    zone["rrsets"].pop(race["remove"], None)
                else:
                    zone["rrsets"][key(race["rrset"])] = dict(race["rrset"], kind="dns#resourceRecordSet")
            for i, deletion in enumerate(body.get("deletions", [])):
                held = zone["rrsets"].get(key(deletion))
                if held is None:
                    # Cloud DNS' answer to a deletion of a set that is gone
                    # (kubernetes-sigs/external-dns#2817).
                    raise error(404, "notFound", "The 'entity.change.deletions[%d]' resource named '%s (%s)' does "
                                "not exist." % (i, deletion.get("name"), deletion.get("type")))
                if strip(held) != strip(deletion):
                    raise error(412, "conditionNotMet", "Precondition not met for 'entity.change.deletions[%d]'"
                                % i, "FAILED_PRECONDITION")
            deleted = set(key(d) for d in body.get("deletions", []))
            for addition in body.get("additions", []):
                if key(addition) in zone["rrsets"] and key(addition) not in deleted:
                    raise error(409, "alreadyExists", "The resource 'entity.change.additions[%s]' named '%s (%s)' already exists"
                                % (addition.get("name"), addition.get("name"), addition.get("type")))
            for deletion in body.get("deletions", []):
                del zone["rrsets"][key(deletion)]
            for addition in body.get("additions", []):
                zone["rrsets"][key(addition)] = dict(addition, kind="dns#resourceRecordSet")
            data["next_change"] = data.get("next_change", 0) + 1
            change_id = str(data["next_change"])
            data.setdefault("changes", {})[zid + "/" + change_id] = data.get("pending_polls", 0)
            return {"kind": "dns#change", "id": change_id, "status": "pending" if data.get("pending_polls") else "done",
                    "startTime": "2026-11-25T00:00:00.000Z",
                    "additions": body.get("additions", []), "deletions": body.get("deletions", [])}
        if mid == "dns.changes.get":
            zid = find_zone(data, p["managedZone"])
            k = zid + "/" + p["changeId"]
            if k not in data.get("changes", {}):
                raise error(404, "notFound", "The 'parameters.changeId' resource named '%s' does not exist." % p["changeId"])
            left = data["changes"][k]
            if left > 0:
                data["changes"][k] = left - 1
            return {"kind": "dns#change", "id": p["changeId"], "status": "pending" if left > 0 else "done"}
        raise error(400, "invalid", "the stand-in does not serve %s" % mid)


def find_disk(data, name, zone):
    """The state's key of zonal disk `name` in `zone` (a disk's name is unique in its zone only:
    an entry may carry its `name` under another key)."""
    for key, disk in data["disks"].items():
        if disk.get("name", key) == name and disk.get("zone") == zone:
            return key
    return None


def extra_permissions(mid):
    """Permissions a method needs on another resource besides its own: attaching a disk needs
    `compute.disks.use` on the disk (cloud.google.com/compute/docs/access/iam-permissions)."""
    return {"compute.instances.attachDisk": ["compute.disks.use"]}.get(mid, [])


def method_permission(mid):
    """The IAM permission a method needs, as Google names it."""
    return {"compute.disks.aggregatedList": "compute.disks.list",
            "compute.instances.aggregatedList": "compute.instances.list",
            "compute.zoneOperations.wait": "compute.zoneOperations.get"}.get(mid, mid)


def key(rrset):
    return rrset.get("name", "") + "|" + rrset.get("type", "")


def strip(rrset):
    return {k: rrset.get(k) for k in ("name", "type", "ttl", "rrdatas")}


def zone_json(zid, zone):
    return {"kind": "dns#managedZone", "id": zid, "name": zone["name"], "dnsName": zone["dnsName"],
            "visibility": zone.get("visibility", "public"), "description": "",
            "nameServers": ["ns-cloud-a1.googledomains.com."]}


def find_zone(data, ref):
    for zid, zone in data["managed_zones"].items():
        if ref in (zid, zone["name"]):
            return zid
    raise error(404, "notFound", "The 'parameters.managedZone' resource named '%s' does not exist." % ref)


# ---------------------------------------------------------------------------------------------
# Servers.


class ApiHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def serve(self, http_method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        caller, generation = None, None
        if token.startswith("ya29.standin."):
            caller, _, generation = token.removeprefix("ya29.standin.").partition(".")
        record = {"server": "api", "method": http_method, "path": url.path, "query": query,
                  "caller": caller, "time": time.time()}
        discovery, api = self.server.discovery, self.server.api
        method, params = discovery.match(http_method, url.path)
        try:
            if method is None:
                problem = "%s %s is no method of the discovery documents" % (http_method, url.path)
                append(self.server.violations, dict(record, problem=problem))
                raise error(400, "invalid", problem)
            record["id"] = method["id"]
            body = json.loads(raw) if raw else {}
            problems = discovery.check_query(method, query)
            if method["request"]:
                problems += discovery.check_value(method["api"], {"$ref": method["request"]}, body, "body")
            elif raw:
                problems.append("%s takes no body" % method["id"])
            if problems:
                append(self.server.violations, dict(record, problem="; ".join(problems)))
                raise error(400, "invalid", "; ".join(problems))
            with State(self.server.state_path) as data:
                known = caller in data["instances"]
                revoked = generation and int(generation) in data.get("revoked_tokens", {}).get(caller, [])
            if not known:
                raise error(401, "required", "Request is missing required authentication credential.",
                            "UNAUTHENTICATED")
            if revoked:
                raise error(401, "authError", "Request had invalid authentication credentials. Expected OAuth 2 "
                            "access token, login cookie or other valid authentication credential.",
                            "UNAUTHENTICATED")
            try:
                result = api.handle(method, params, query, body, caller)
            except Hold as held:
                result = api.hold(held)
            if method["response"]:
                problems = discovery.check_value(method["api"], {"$ref": method["response"]}, result, "answer")
                if problems:
                    append(self.server.violations, dict(record, problem="the stand-in's answer: " + "; ".join(problems)))
            record["status"] = 200
            append(self.server.log, record)
            self.answer(200, result)
        except Answer as a:
            record["status"] = a.status
            append(self.server.log, record)
            self.answer(a.status, a.body)

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")

    def do_PATCH(self):
        self.serve("PATCH")

    def do_PUT(self):
        self.serve("PUT")

    def do_DELETE(self):
        self.serve("DELETE")


class MetadataHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, text, content_type="text/plain"):
        data = text.encode()
        self.send_response(status)
        self.send_header("Metadata-Flavor", "Google")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        server = self.server
        path = urllib.parse.urlsplit(self.path).path
        append(server.log, {"server": "metadata", "instance": server.instance, "method": "GET",
                            "path": path, "time": time.time()})
        if time.monotonic() < server.ready_at:
            return self.answer(503, "starting")
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.answer(403, "Missing required header \"Metadata-Flavor\": \"Google\"")
        prefix = "/computeMetadata/v1/"
        if not path.startswith(prefix):
            return self.answer(404, "not found")
        item = path[len(prefix):]
        with State(server.state_path) as data:
            inst = data["instances"].get(server.instance)
            project = data["project"]
        if inst is None:
            return self.answer(404, "not found")
        values = {
            "project/project-id": project,
            "project/numeric-project-id": "123456789012",
            "instance/name": server.instance,
            "instance/hostname": "%s.%s.c.%s.internal" % (server.instance, inst["zone"], project),
            "instance/zone": "projects/123456789012/zones/%s" % inst["zone"],
            "instance/network-interfaces/0/ip": inst["ip"],
        }
        if inst.get("ipv6"):
            values["instance/network-interfaces/0/ipv6s"] = inst["ipv6"] + "\n"
        if inst.get("external_ip"):
            values["instance/network-interfaces/0/access-configs/0/external-ip"] = inst["external_ip"]
        values["instance/tags"] = json.dumps(inst.get("tags", []))
        for k, v in inst.get("metadata", {}).items():
            values["instance/attributes/" + k] = v
        if item == "instance/service-accounts/default/token":
            with State(server.state_path) as data:
                generations = data.setdefault("token_generation", {})
                generations[server.instance] = generations.get(server.instance, 0) + 1
                generation = generations[server.instance]
            token = {"access_token": "ya29.standin.%s.%d" % (server.instance, generation),
                     "expires_in": 3599, "token_type": "Bearer"}
            return self.answer(200, json.dumps(token), "application/json")
        if item in values:
            return self.answer(200, values[item])
        return self.answer(404, "not found")


def main():
    if MODE == "api":
        cert_dir, state_path, log, discovery_dir = sys.argv[2:6]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ApiHandler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(cert_dir, "server.crt"), os.path.join(cert_dir, "server.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.state_path, server.log = state_path, log
        server.violations = log + ".violations"
        server.discovery = Discovery(discovery_dir)
        server.api = Api(state_path, server.discovery)
    elif MODE == "metadata":
        instance, state_path, log = sys.argv[2:5]
        ready_after = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
        address = sys.argv[6] if len(sys.argv) > 6 else "127.0.0.1"
        port = int(sys.argv[7]) if len(sys.argv) > 7 else 0
        server = http.server.ThreadingHTTPServer((address, port), MetadataHandler)
        server.instance, server.state_path, server.log = instance, state_path, log
        server.ready_at = time.monotonic() + ready_after
    else:
        sys.exit("usage: gce_standin.py api|metadata ...")
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
