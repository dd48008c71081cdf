"""A stand-in for the clouds where protokube is the gossip member only (Hetzner Cloud,
DigitalOcean): each one's metadata service and the API calls protokube makes, in the cloud's
own shapes, with paging, bearer-token auth, its error bodies and its rate-limit answers. Every
answer it gives is first handed to the cloud's official Python client, through that client's own
HTTP layer (a `requests` adapter that replays the answer), the way protokube's request would be
read by it: Hetzner's `hcloud` (`client.servers.get_by_id`, `get_list`, its `APIException`),
DigitalOcean's `pydo` (generated from DigitalOcean's OpenAPI: `droplets.list`, its
`HttpResponseError`). An answer the client cannot read, or reads otherwise, is a violation:
written to the log, which the tests require to hold none. A request the real API refuses (an
unknown query parameter, a `per_page` out of range, a malformed label selector) is refused here
in the API's words.

  api CLOUD STATE LOG CERT_DIR
      HTTPS on 127.0.0.1 with CERT_DIR/server.{crt,key}.
      hetzner: GET /v1/servers/{id}, GET /v1/servers?label_selector=&per_page=&page=
      (Hetzner's label selector: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated).
      digitalocean: GET /v2/droplets?tag_name=&per_page=&page= (links.pages.next).
      `Authorization: Bearer <state token>`, else 401.
  metadata CLOUD INSTANCE STATE LOG
      HTTP on 127.0.0.1: the metadata service of server or droplet INSTANCE.
      hetzner: /hetzner/v1/metadata/{instance-id,hostname,availability-zone,region}.
      digitalocean: /metadata/v1/{id,hostname,region,tags,interfaces/private/0/ipv4/address}.

The state is one JSON file: `token`, the servers (`servers`, Hetzner's shape) or droplets
(`droplets`, DigitalOcean's), and `rate_limited` {operation: n} (answered 429 n times, with the
cloud's reset header one second ahead). Every request is appended to LOG as a JSON line (time,
server, operation, path, query, status). Prints `PORT <n>` when it listens.
"""

import http.server
import io
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

import requests
import urllib3

LOCK = threading.Lock()


def load(path):
    with LOCK:
        with open(path) as f:
            return json.load(f)


def save(path, state):
    with LOCK:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)


def log(path, entry):
    with LOCK:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Replay(requests.adapters.BaseAdapter):
    """A `requests` adapter that answers the client's request with the stand-in's answer."""

    def __init__(self, status, headers, body):
        super().__init__()
        self.answer = (status, headers, body)

    def send(self, request, **kwargs):
        status, headers, body = self.answer
        response = requests.Response()
        response.status_code = status
        response.headers = requests.structures.CaseInsensitiveDict(headers)
        response._content = body
        # The raw stream too, for clients that read it (azure-core's transport, under pydo).
        response.raw = urllib3.HTTPResponse(
            body=io.BytesIO(body), headers=headers, status=status, preload_content=False
        )
        response.url = request.url
        response.request = request
        response.reason = http.HTTPStatus(status).phrase
        return response

    def close(self):
        pass


# --- Hetzner Cloud ---------------------------------------------------------------------------

HETZNER_ERRORS = {
    400: "invalid_input",
    401: "unauthorized",
    404: "not_found",
    429: "rate_limit_exceeded",
}


def hetzner_selector(selector):
    """Hetzner's label selector as a predicate on labels; ValueError when malformed."""
    tests = []
    for term in selector.split(","):
        term = term.strip()
        if not term:
            raise ValueError("empty term")
        if "!=" in term:
            key, value = term.split("!=", 1)
            tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "==" in term or "=" in term:
            key, value = term.split("==", 1) if "==" in term else term.split("=", 1)
            if "=" in value:
                raise ValueError(f"bad term {term!r}")
            tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif term.startswith("!"):
            tests.append(lambda labels, k=term[1:]: k not in labels)
        else:
            tests.append(lambda labels, k=term: k in labels)
        if not key_ok(term.lstrip("!").split("=")[0].split("!")[0]):
            raise ValueError(f"bad key in {term!r}")
    return lambda labels: all(t(labels) for t in tests)


def key_ok(key):
    name = key.split("/")[-1]
    return 0 < len(name) <= 63 and all(c.isalnum() or c in "-_." for c in name)


def hetzner_api(method, path, query, state):
    """(operation, status, body, extra headers) of a Hetzner Cloud API request."""
    parts = path.strip("/").split("/")
    if method != "GET" or parts[:2] != ["v1", "servers"] or len(parts) > 3:
        return "unknown", 404, {"error": {"code": "not_found", "message": "not found"}}
    if len(parts) == 3:
        if query:
            return "servers.get", 400, hetzner_error(400, "unknown parameters")
        wanted = parts[2]
        for server in state.get("servers", []):
            if str(server["id"]) == wanted:
                return "servers.get", 200, {"server": server}
        return "servers.get", 404, hetzner_error(404, f"server with ID '{wanted}' not found")
    allowed = {"label_selector", "per_page", "page", "name", "status", "sort"}
    if set(query) - allowed:
        return "servers.list", 400, hetzner_error(400, f"invalid parameters: {sorted(set(query) - allowed)}")
    try:
        per_page = int(query.get("per_page", ["25"])[0])
        page = int(query.get("page", ["1"])[0])
        if not (1 <= per_page <= 50) or page < 1:
            raise ValueError("out of range")
        matches = hetzner_selector(query["label_selector"][0]) if "label_selector" in query else lambda _: True
    except (ValueError, KeyError) as err:
        return "servers.list", 400, hetzner_error(400, f"invalid input: {err}")
    found = [s for s in state.get("servers", []) if matches(s["labels"])]
    last = max(1, (len(found) + per_page - 1) // per_page)
    body = {
        "servers": found[(page - 1) * per_page : page * per_page],
        "meta": {
            "pagination": {
                "page": page,
                "per_page": per_page,
                "previous_page": page - 1 if page > 1 else None,
                "next_page": page + 1 if page < last else None,
                "last_page": last,
                "total_entries": len(found),
            }
        },
    }
    return "servers.list", 200, body


def hetzner_error(status, message):
    return {"error": {"code": HETZNER_ERRORS.get(status, "service_error"), "message": message, "details": {}}}


def hetzner_rate_headers(reset):
    return {"RateLimit-Limit": "3600", "RateLimit-Remaining": "0" if reset else "3599",
            "RateLimit-Reset": str(reset or int(time.time()) + 1)}


def hetzner_check(operation, path, query, status, headers, body):
    """Hands the answer to hcloud, through its own HTTP layer; the violation, if any."""
    import hcloud

    client = hcloud.Client(token="checked", api_endpoint="https://api.hetzner.cloud/v1")
    client._client._retry_max_retries = 0
    client._client._session.mount("https://", Replay(status, headers, json.dumps(body).encode()))
    try:
        if operation == "servers.get":
            server = client.servers.get_by_id(int(path.rsplit("/", 1)[1]))
            read = (server.id, server.name, server.labels, [n.ip for n in server.private_net],
                    server.public_net.ipv4.ip if server.public_net.ipv4 else None,
                    server.location.name, server.location.network_zone, server.created)
            if read[0] != body["server"]["id"]:
                return f"hcloud read server {read[0]}, not {body['server']['id']}"
        elif operation == "servers.list":
            result = client.servers.get_list(
                label_selector=query.get("label_selector", [None])[0],
                page=int(query.get("page", ["1"])[0]),
                per_page=int(query.get("per_page", ["25"])[0]),
            )
            if [s.id for s in result.servers] != [s["id"] for s in body["servers"]]:
                return "hcloud read other servers than were sent"
            if result.meta.pagination.next_page != body["meta"]["pagination"]["next_page"]:
                return "hcloud read another next page"
        if status >= 400:
            return f"hcloud took HTTP {status} for a success"
    except hcloud.APIException as err:
        if status < 400 or err.code != body["error"]["code"]:
            return f"hcloud read HTTP {status} as {err.code!r}: {err.message}"
    except Exception as err:  # noqa: BLE001 - any failure to read is the violation
        return f"hcloud could not read the answer: {type(err).__name__}: {err}"
    return None


def hetzner_metadata(path, instance, state):
    prefix = "/hetzner/v1/metadata/"
    if not path.startswith(prefix):
        return 404, "not found"
    server = next((s for s in state.get("servers", []) if str(s["id"]) == instance), None)
    if server is None:
        return 404, "not found"
    item = path[len(prefix):]
    answers = {
        "instance-id": str(server["id"]),
        "hostname": server["name"],
        "availability-zone": server["location"]["name"] + "-dc14",
        "region": server["location"]["name"],
    }
    if item not in answers:
        return 404, "not found"
    return 200, answers[item]


# --- DigitalOcean ----------------------------------------------------------------------------


def do_api(method, path, query, state):
    if method != "GET" or path.rstrip("/") != "/v2/droplets":
        return "unknown", 404, {"id": "not_found", "message": "The resource you were accessing could not be found."}
    allowed = {"tag_name", "per_page", "page", "name", "type"}
    if set(query) - allowed:
        return "droplets.list", 400, {"id": "bad_request", "message": f"unknown parameters {sorted(set(query) - allowed)}"}
    try:
        per_page = int(query.get("per_page", ["20"])[0])
        page = int(query.get("page", ["1"])[0])
        if not (1 <= per_page <= 200) or page < 1:
            raise ValueError("out of range")
    except ValueError as err:
        return "droplets.list", 400, {"id": "bad_request", "message": f"invalid paging: {err}"}
    tag = query.get("tag_name", [None])[0]
    found = [d for d in state.get("droplets", []) if tag is None or tag in d["tags"]]
    last = max(1, (len(found) + per_page - 1) // per_page)
    pages = {}
    base = "https://api.digitalocean.com/v2/droplets?"

    def link(n):
        return base + urllib.parse.urlencode({**({"tag_name": tag} if tag else {}), "per_page": per_page, "page": n})

    if page < last:
        pages["next"] = link(page + 1)
        pages["last"] = link(last)
    if page > 1:
        pages["first"] = link(1)
        pages["prev"] = link(page - 1)
    body = {
        "droplets": found[(page - 1) * per_page : page * per_page],
        "links": {"pages": pages},
        "meta": {"total": len(found)},
    }
    return "droplets.list", 200, body


def do_rate_headers(reset):
    return {"ratelimit-limit": "5000", "ratelimit-remaining": "0" if reset else "4999",
            "ratelimit-reset": str(reset or int(time.time()) + 1)}


def do_check(operation, path, query, status, headers, body):
    """Hands the answer to pydo, through its own HTTP layer; the violation, if any."""
    import pydo
    from azure.core.exceptions import HttpResponseError
    from azure.core.pipeline.transport import RequestsTransport

    session = requests.Session()
    session.mount("https://", Replay(status, headers, json.dumps(body).encode()))
    client = pydo.Client(token="checked", transport=RequestsTransport(session=session, session_owner=False), retry_total=0)
    try:
        if operation == "droplets.list":
            kwargs = {"per_page": int(query.get("per_page", ["20"])[0]), "page": int(query.get("page", ["1"])[0])}
            if "tag_name" in query:
                kwargs["tag_name"] = query["tag_name"][0]
            read = client.droplets.list(**kwargs)
            droplets = read["droplets"]
            if [d["id"] for d in droplets] != [d["id"] for d in body["droplets"]]:
                return "pydo read other droplets than were sent"
            for droplet in droplets:
                # What godo reads of a droplet (`PrivateIPv4`, its tags and name).
                for network in droplet["networks"]["v4"]:
                    network["ip_address"], network["type"]
                droplet["tags"], droplet["name"], droplet["status"]
        if status >= 400:
            return f"pydo took HTTP {status} for a success"
    except HttpResponseError as err:
        if status < 400 or err.status_code != status:
            return f"pydo read HTTP {status} as {err.status_code}: {err.message}"
        said = err.response.json()
        if said.get("id") != body.get("id") or said.get("message") != body.get("message"):
            return f"pydo read another error: {said}"
    except Exception as err:  # noqa: BLE001 - any failure to read is the violation
        return f"pydo could not read the answer: {type(err).__name__}: {err}"
    return None


def do_metadata(path, instance, state):
    prefix = "/metadata/v1/"
    droplet = next((d for d in state.get("droplets", []) if str(d["id"]) == instance), None)
    if droplet is None or not path.startswith(prefix):
        return 404, "not found"
    private = next((n["ip_address"] for n in droplet["networks"]["v4"] if n["type"] == "private"), None)
    answers = {
        "id": str(droplet["id"]),
        "hostname": droplet["name"],
        "region": droplet["region"]["slug"],
        "tags": "\n".join(droplet["tags"]) + "\n",
        "interfaces/private/0/ipv4/address": private,
    }
    item = path[len(prefix):]
    if answers.get(item) is None:
        return 404, "not found"
    return 200, answers[item]


# --- OpenStack (Keystone v3, Nova v2.1) -----------------------------------------------------

OPENSTACK_TOKEN_LIFETIME = 3600


def openstack_error(status, message):
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests"}
    return {"error": {"code": status, "title": titles.get(status, "Error"), "message": message}}


def openstack_api(method, path, query, state, request):
    """(operation, status, body, extra headers) of a Keystone or Nova request."""
    if path == "/identity/v3/auth/tokens":
        if method != "POST":
            return "identity.tokens.create", 405, openstack_error(405, "method not allowed"), {}
        identity = (request or {}).get("auth", {}).get("identity", {})
        wanted = state["credentials"]
        methods = identity.get("methods", [])
        if methods == ["application_credential"]:
            given = identity.get("application_credential", {})
            ok = given.get("id") == wanted["application_credential_id"] and given.get("secret") == state["token"]
        elif methods == ["password"]:
            user = identity.get("password", {}).get("user", {})
            scope = request["auth"].get("scope", {}).get("project", {})
            ok = (user.get("name") == wanted["user"] and user.get("password") == state["token"]
                  and user.get("domain") in ({"id": "default"}, {"name": "Default"})
                  and scope in ({"id": state["project"]}, {"name": "demo", "domain": {"id": "default"}}))
        else:
            return "identity.tokens.create", 400, openstack_error(400, "Expecting to find identity methods"), {}
        if not ok:
            return "identity.tokens.create", 401, openstack_error(401, "The request you have made requires authentication."), {}
        token = "gAAAAAB-standin-%d" % int(time.time() * 1000)
        state.setdefault("issued", []).append(token)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        later = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() + OPENSTACK_TOKEN_LIFETIME))
        base = state["self_url"]
        body = {"token": {
            "methods": methods, "expires_at": later, "issued_at": now, "audit_ids": ["standin"],
            "user": {"id": "u1", "name": wanted["user"], "domain": {"id": "default", "name": "Default"}, "password_expires_at": None},
            "project": {"id": state["project"], "name": "demo", "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": "r1", "name": "member"}, {"id": "r2", "name": "reader"}],
            "catalog": [
                {"type": "identity", "name": "keystone", "id": "s1", "endpoints": [
                    {"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": base + "/identity/v3"}]},
                {"type": "compute", "name": "nova", "id": "s2", "endpoints": [
                    {"id": "e2", "interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": "https://nova.internal.invalid/v2.1"},
                    {"id": "e3", "interface": "public", "region": "RegionTwo", "region_id": "RegionTwo", "url": "https://nova.region-two.invalid/v2.1"},
                    {"id": "e4", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": base + "/compute/v2.1"}]},
            ],
        }}
        return "identity.tokens.create", 201, body, {"X-Subject-Token": token}
    if method != "GET" or path != "/compute/v2.1/servers/detail":
        return "unknown", 404, {"itemNotFound": {"code": 404, "message": "The resource could not be found."}}, {}
    allowed = {"limit", "marker", "tenant_id", "name", "all_tenants", "status"}
    if set(query) - allowed:
        return "compute.servers.list", 400, {"badRequest": {"code": 400, "message": "Additional properties are not allowed (%s)" % sorted(set(query) - allowed)}}, {}
    try:
        limit = int(query.get("limit", ["1000"])[0])
        if not 1 <= limit <= 1000:
            raise ValueError("limit")
    except ValueError:
        return "compute.servers.list", 400, {"badRequest": {"code": 400, "message": "Invalid input for query parameters limit."}}, {}
    servers = [x for x in state.get("servers", []) if x.get("tenant_id") == state["project"]]
    if "name" in query:
        import re
        pattern = re.compile(query["name"][0])
        servers = [x for x in servers if pattern.search(x["name"])]
    if "marker" in query:
        ids = [x["id"] for x in servers]
        if query["marker"][0] not in ids:
            return "compute.servers.list", 400, {"badRequest": {"code": 400, "message": "marker [%s] not found" % query["marker"][0]}}, {}
        servers = servers[ids.index(query["marker"][0]) + 1:]
    page = servers[:limit]
    body = {"servers": page}
    if len(servers) > limit:
        body["servers_links"] = [{"rel": "next", "href": "%s/compute/v2.1/servers/detail?limit=%d&marker=%s" % (state["self_url"], limit, page[-1]["id"])}]
    return "compute.servers.list", 200, body, {}


def openstack_authorized(operation, headers, state):
    if operation == "identity.tokens.create":
        return True
    return headers.get("X-Auth-Token") in state.get("issued", [])


def openstack_check(operation, path, query, status, headers, body):
    """Hands the answer to keystoneauth1 and openstacksdk; the violation, if any."""
    import keystoneauth1.access
    import keystoneauth1.exceptions
    from openstack.compute.v2.server import Server

    try:
        if status >= 400:
            response = requests.Response()
            response.status_code = status
            response.headers = requests.structures.CaseInsensitiveDict(headers)
            response._content = json.dumps(body).encode()
            error = keystoneauth1.exceptions.from_response(response, "GET", "https://standin" + path)
            if error.http_status != status:
                return "keystoneauth1 read HTTP %d as %s" % (status, error.http_status)
            return None
        if operation == "identity.tokens.create":
            access = keystoneauth1.access.create(body=body, auth_token=headers["X-Subject-Token"])
            url = access.service_catalog.url_for(service_type="compute", interface="public", region_name="RegionOne")
            if not url.endswith("/compute/v2.1") or access.project_id != body["token"]["project"]["id"]:
                return "keystoneauth1 read another catalogue: %s" % url
        elif operation == "compute.servers.list":
            for raw in body["servers"]:
                server = Server.existing(**raw)
                if server.name != raw["name"] or dict(server.metadata) != raw["metadata"] or server.addresses != raw["addresses"]:
                    return "openstacksdk read server %s otherwise" % raw["id"]
            if "servers_links" in body:
                response = requests.Response()
                response.status_code = status
                next_link, params = Server._get_next_link("servers/detail", response, body, None, query.get("limit", [None])[0], len(body["servers"]))
                if not next_link or "marker=" not in next_link:
                    return "openstacksdk found no next page in %s" % body["servers_links"]
    except Exception as err:  # noqa: BLE001 - any failure to read is the violation
        return "the OpenStack clients could not read the answer: %s: %s" % (type(err).__name__, err)
    return None


def openstack_metadata(path, instance, state):
    if path != "/openstack/latest/meta_data.json":
        return 404, "not found"
    server = next((x for x in state.get("servers", []) if x["id"] == instance), None)
    if server is None:
        return 404, "not found"
    return 200, json.dumps({
        "uuid": server["id"], "name": server["name"], "hostname": server["name"] + ".novalocal",
        "project_id": server["tenant_id"], "availability_zone": server["OS-EXT-AZ:availability_zone"],
        "meta": server["metadata"], "launch_index": 0, "devices": [], "keys": [], "public_keys": {},
    })


# --- Azure (instance metadata service, Resource Manager) ------------------------------------

AZURE_PAGE = 50


def azure_error(status, message):
    codes = {400: "InvalidParameter", 401: "InvalidAuthenticationToken", 403: "AuthorizationFailed",
             404: "ResourceNotFound", 429: "TooManyRequests"}
    return {"error": {"code": codes.get(status, "InternalServerError"), "message": message}}


def azure_api(method, path, query, state):
    parts = path.strip("/").split("/")
    prefix = ["subscriptions", state["subscription"], "resourceGroups", state["resource_group"],
              "providers", "Microsoft.Compute", "virtualMachineScaleSets"]
    if method != "GET" or parts[:len(prefix)] != prefix:
        return "unknown", 404, azure_error(404, "The resource was not found.")
    rest = parts[len(prefix):]
    allowed = {"api-version", "$skiptoken"}
    if set(query) - allowed or "api-version" not in query:
        return "arm", 400, {"error": {"code": "MissingApiVersionParameter" if "api-version" not in query else "InvalidQueryParameter", "message": "bad query %s" % sorted(query)}}
    sets = state.get("scale_sets", [])
    if not rest:
        if query["api-version"][0] != "2024-07-01":
            return "compute.virtualMachineScaleSets.list", 400, {"error": {"code": "NoRegisteredProviderFound", "message": "api-version"}}
        skip = int(query.get("$skiptoken", ["0"])[0])
        body = {"value": [azure_vmss(x, state) for x in sets[skip:skip + AZURE_PAGE]]}
        if skip + AZURE_PAGE < len(sets):
            body["nextLink"] = "%s/%s?api-version=2024-07-01&$skiptoken=%d" % (state["self_url"], "/".join(prefix), skip + AZURE_PAGE)
        return "compute.virtualMachineScaleSets.list", 200, body
    if len(rest) == 2 and rest[1] == "networkInterfaces":
        operation = "network.networkInterfaces.listVirtualMachineScaleSetNetworkInterfaces"
        found = next((x for x in sets if x["name"] == rest[0]), None)
        if found is None:
            return operation, 404, azure_error(404, "The Resource 'Microsoft.Compute/virtualMachineScaleSets/%s' was not found." % rest[0])
        nics = []
        if found.get("ip"):
            nics.append({
                "name": "nic-%s" % found["name"], "id": "/%s/%s/virtualMachines/0/networkInterfaces/nic" % ("/".join(prefix), found["name"]),
                "location": "eastus",
                "properties": {"provisioningState": "Succeeded", "primary": True, "ipConfigurations": [{
                    "name": "ipconfig1", "id": "/ipconfig1",
                    "properties": {"provisioningState": "Succeeded", "privateIPAddress": found["ip"],
                                   "privateIPAllocationMethod": "Dynamic", "privateIPAddressVersion": "IPv4", "primary": True}}]}})
        return operation, 200, {"value": nics}
    return "unknown", 404, azure_error(404, "The resource was not found.")


def azure_vmss(x, state):
    tags = {"KubernetesCluster": x["cluster"], "k8s.io_role_" + ("control-plane" if x["role"] == "ControlPlane" else x["role"].lower()): "1"}
    return {"name": x["name"], "id": "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s" % (state["subscription"], state["resource_group"], x["name"]),
            "type": "Microsoft.Compute/virtualMachineScaleSets", "location": "eastus", "tags": tags,
            "sku": {"name": "Standard_D2s_v3", "tier": "Standard", "capacity": 1},
            "properties": {"provisioningState": "Succeeded", "overprovision": False, "singlePlacementGroup": True,
                           "upgradePolicy": {"mode": "Manual"}, "uniqueId": "u-%s" % x["name"]}}


def azure_authorized(operation, headers, state):
    return headers.get("Authorization") == "Bearer " + state["token"]


def azure_check(operation, path, query, status, headers, body):
    """Hands the answer to Azure's SDK models (azure-mgmt-compute, azure-mgmt-network,
    azure-core's ARM error format); the violation, if any."""
    from azure.core.exceptions import ODataV4Format
    from azure.mgmt.compute.models import VirtualMachineScaleSet
    from azure.mgmt.network.models import NetworkInterface

    try:
        if status >= 400:
            error = ODataV4Format(body)
            if error.code != body["error"]["code"] or error.message != body["error"]["message"]:
                return "azure-core read another error: %s" % error
            return None
        if operation == "compute.virtualMachineScaleSets.list":
            for raw in body["value"]:
                vmss = VirtualMachineScaleSet(raw)
                if vmss.name != raw["name"] or dict(vmss.tags) != raw["tags"]:
                    return "azure-mgmt-compute read scale set %s otherwise" % raw["name"]
        elif operation.startswith("network.networkInterfaces"):
            for raw in body["value"]:
                nic = NetworkInterface(raw)
                read = [c.properties.private_ip_address for c in nic.properties.ip_configurations]
                if read != [c["properties"]["privateIPAddress"] for c in raw["properties"]["ipConfigurations"]]:
                    return "azure-mgmt-network read interface %s otherwise" % raw["name"]
    except Exception as err:  # noqa: BLE001 - any failure to read is the violation
        return "Azure's SDK could not read the answer: %s: %s" % (type(err).__name__, err)
    return None


def azure_metadata_answer(path, query, headers, instance, state):
    if headers.get("Metadata") != "true":
        return 400, json.dumps({"error": "Bad request. Required metadata header not specified"})
    x = next((x for x in state.get("scale_sets", []) if x["id"] == instance), None)
    if x is None:
        return 404, json.dumps({"error": "Not found"})
    if path == "/metadata/instance":
        if query.get("api-version") != ["2020-06-01"] or query.get("format") != ["json"]:
            return 400, json.dumps({"error": "Bad request. api-version was not specified in the request"})
        tags = azure_vmss(x, state)["tags"]
        return 200, json.dumps({
            "compute": {"name": "%s_0" % x["name"], "vmScaleSetName": x["name"], "location": "eastus", "zone": "",
                        "resourceGroupName": state["resource_group"], "subscriptionId": state["subscription"],
                        "tags": ";".join("%s:%s" % item for item in tags.items()), "vmId": "vm-%s" % x["id"],
                        "osType": "Linux", "vmSize": "Standard_D2s_v3"},
            "network": {"interface": [{"ipv4": {"ipAddress": [{"privateIpAddress": x.get("ip") or "", "publicIpAddress": ""}],
                                                "subnet": [{"address": "10.0.0.0", "prefix": "16"}]},
                                       "ipv6": {"ipAddress": []}, "macAddress": "000D3A000001"}]},
        })
    if path == "/metadata/identity/oauth2/token":
        identity = query.get("client_id", ["system"])[0]
        if identity not in state.get("identities", []):
            return 400, json.dumps({"error": "invalid_request", "error_description": "Identity not found"})
        now = int(time.time())
        return 200, json.dumps({"access_token": state["token"], "client_id": identity, "expires_in": "86399",
                                "expires_on": str(now + 86399), "ext_expires_in": "86399", "not_before": str(now),
                                "resource": query.get("resource", [""])[0], "token_type": "Bearer"})
    return 404, json.dumps({"error": "Not found"})


# --- Scaleway (instance metadata API, Instance v1, IPAM v1) ---------------------------------


def scaleway_error(status, message):
    types = {400: "invalid_arguments", 401: "denied_authentication", 403: "permissions_denied",
             404: "not_found", 429: "too_many_requests"}
    return {"type": types.get(status, "internal_error"), "message": message}


def scaleway_server(x):
    return {
        "id": x["id"], "name": x["name"], "organization": "org-1", "project": "proj-1",
        "allowed_actions": ["poweroff", "terminate", "reboot"], "tags": x["tags"],
        "commercial_type": "DEV1-M", "creation_date": "2026-01-30T23:55:00.000000+00:00",
        "dynamic_ip_required": False, "routed_ip_enabled": True, "enable_ipv6": False,
        "hostname": x["name"], "image": None, "protected": False, "private_ip": None, "public_ip": None,
        "public_ips": [], "mac_address": "de:00:00:00:00:01", "modification_date": "2026-01-30T23:56:00.000000+00:00",
        "state": "running", "location": {"cluster_id": "1", "hypervisor_id": "1", "node_id": "1", "platform_id": "14", "zone_id": x["zone"]},
        "ipv6": None, "boot_type": "local", "volumes": {}, "security_group": {"id": "sg-1", "name": "default"},
        "maintenances": [], "state_detail": "booted", "arch": "x86_64", "placement_group": None,
        "private_nics": [], "zone": x["zone"], "admin_password_encryption_ssh_key_id": None,
        "filesystems": [], "end_of_service": False,
    }


def scaleway_api(method, path, query, state):
    parts = path.strip("/").split("/")
    servers = state.get("servers", [])
    if method == "GET" and parts[:3] == ["instance", "v1", "zones"] and len(parts) >= 5 and parts[4] == "servers":
        zone = parts[3]
        if len(parts) == 6:
            if query:
                return "instance.servers.get", 400, scaleway_error(400, "unknown parameters")
            found = next((x for x in servers if x["id"] == parts[5] and x["zone"] == zone), None)
            if found is None:
                return "instance.servers.get", 404, {"message": "resource is not found", "resource": "instance_server", "resource_id": parts[5], "type": "not_found"}
            return "instance.servers.get", 200, {"server": scaleway_server(found)}
        allowed = {"tags", "per_page", "page", "name", "project", "organization"}
        if set(query) - allowed:
            return "instance.servers.list", 400, scaleway_error(400, "unknown parameters %s" % sorted(set(query) - allowed))
        try:
            per_page = int(query.get("per_page", ["50"])[0])
            page = int(query.get("page", ["1"])[0])
            if not 1 <= per_page <= 100 or page < 1:
                raise ValueError
        except ValueError:
            return "instance.servers.list", 400, {"message": "Validation Error", "type": "invalid_arguments", "fields": {"per_page": ["out of range"]}}
        wanted = [t for t in query.get("tags", [""])[0].split(",") if t]
        found = [x for x in servers if x["zone"] == zone and all(t in x["tags"] for t in wanted)]
        return "instance.servers.list", 200, {"servers": [scaleway_server(x) for x in found[(page - 1) * per_page:page * per_page]], "total_count": len(found)}
    if method == "GET" and parts[:3] == ["ipam", "v1", "regions"] and len(parts) == 5 and parts[4] == "ips":
        allowed = {"resource_id", "is_ipv6", "zonal", "page", "page_size", "order_by"}
        if set(query) - allowed:
            return "ipam.ips.list", 400, scaleway_error(400, "unknown parameters %s" % sorted(set(query) - allowed))
        resource = query.get("resource_id", [None])[0]
        found = [x for x in servers if x["id"] == resource and x.get("ip") and x["zone"].rsplit("-", 1)[0] == parts[3]
                 and query.get("zonal", [x["zone"]])[0] == x["zone"]]
        ips = [{"id": "ip-%s" % x["id"], "address": x["ip"] + "/32", "project_id": "proj-1", "is_ipv6": False,
                "created_at": "2026-01-30T23:55:00Z", "updated_at": "2026-01-30T23:55:00Z",
                "source": {"private_network_id": "pn-1"}, "resource": {"type": "instance_private_nic", "id": x["id"], "mac_address": "02:00:00:00:00:01", "name": x["name"]},
                "tags": [], "reverses": [], "region": parts[3], "zone": x["zone"]} for x in found]
        return "ipam.ips.list", 200, {"ips": ips, "total_count": len(ips)}
    return "unknown", 404, {"message": "resource is not found", "type": "not_found"}


def scaleway_authorized(operation, headers, state):
    return headers.get("X-Auth-Token") == state["token"]


def scaleway_check(operation, path, query, status, headers, body):
    """Hands the answer to Scaleway's SDK (its unmarshalling, its exception); the violation."""
    from scaleway.instance.v1.marshalling import unmarshal_GetServerResponse, unmarshal_ListServersResponse
    from scaleway.ipam.v1.marshalling import unmarshal_ListIPsResponse
    from scaleway_core.api import ScalewayException

    try:
        if status >= 400:
            response = requests.Response()
            response.status_code = status
            response._content = json.dumps(body).encode()
            error = ScalewayException(response)
            if error.status_code != status:
                return "scaleway read HTTP %d as %s" % (status, error.status_code)
            return None
        if operation == "instance.servers.get":
            read = unmarshal_GetServerResponse(body)
            if read.server.id != body["server"]["id"] or read.server.tags != body["server"]["tags"]:
                return "scaleway read the server otherwise"
        elif operation == "instance.servers.list":
            read = unmarshal_ListServersResponse(body)
            if [x.name for x in read.servers] != [x["name"] for x in body["servers"]]:
                return "scaleway read other servers"
        elif operation == "ipam.ips.list":
            read = unmarshal_ListIPsResponse(body)
            if [x.address for x in read.ips] != [x["address"] for x in body["ips"]]:
                return "scaleway read other IPs"
    except Exception as err:  # noqa: BLE001 - any failure to read is the violation
        return "Scaleway's SDK could not read the answer: %s: %s" % (type(err).__name__, err)
    return None


def scaleway_metadata(path, instance, state):
    if path != "/conf?format=json":
        return 404, "not found"
    x = next((x for x in state.get("servers", []) if x["id"] == instance), None)
    if x is None:
        return 404, "not found"
    return 200, json.dumps({
        "id": x["id"], "name": x["name"], "hostname": x["name"], "commercial_type": "DEV1-M",
        "organization": "org-1", "project": "proj-1", "tags": x["tags"],
        "location": {"zone_id": x["zone"], "platform_id": "14", "cluster_id": "1", "hypervisor_id": "1", "node_id": "1"},
        "public_ip": None, "private_ip": None, "ipv6": None, "volumes": {}, "ssh_public_keys": [],
    })


CLOUDS = {
    "hetzner": {
        "api": hetzner_api,
        "error": lambda status, message: hetzner_error(status, message),
        "rate_headers": hetzner_rate_headers,
        "check": hetzner_check,
        "metadata": hetzner_metadata,
    },
    "digitalocean": {
        "api": do_api,
        "error": lambda status, message: {
            "id": {401: "unauthorized", 429: "too_many_requests"}.get(status, "error"),
            "message": message,
        },
        "rate_headers": do_rate_headers,
        "check": do_check,
        "metadata": do_metadata,
    },
    "openstack": {
        "api": openstack_api,
        "error": openstack_error,
        "rate_headers": lambda reset: {"Retry-After": "1"} if reset else {},
        "check": openstack_check,
        "metadata": openstack_metadata,
        "authorized": openstack_authorized,
    },
    "azure": {
        "api": azure_api,
        "error": azure_error,
        "rate_headers": lambda reset: {"Retry-After": "1"} if reset else {},
        "check": azure_check,
        "metadata": None,
        "authorized": azure_authorized,
    },
    "scaleway": {
        "api": scaleway_api,
        "error": scaleway_error,
        "rate_headers": lambda reset: {"Retry-After": "1", "X-RateLimit-Reset": "1"} if reset else {},
        "check": scaleway_check,
        "metadata": scaleway_metadata,
        "authorized": scaleway_authorized,
    },
}


def api_handler(cloud, state_path, log_path):
    spec = CLOUDS[cloud]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.answer("GET")

        def do_POST(self):
            self.answer("POST")

        def answer(self, method):
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"null") if length else None
            state = load(state_path)
            state["self_url"] = "https://127.0.0.1:%d" % self.server.server_address[1]
            if cloud == "openstack":
                operation, status, body, extra = spec["api"](method, url.path, query, state, request)
                authorized = spec["authorized"](operation, self.headers, state)
            else:
                operation, status, body = spec["api"](method, url.path, query, state)
                extra = {}
                bearer = lambda operation, headers, state: headers.get("Authorization") == f"Bearer {state['token']}"
                authorized = spec.get("authorized", bearer)(operation, self.headers, state)
            reset = None
            if not authorized:
                status, body, extra = 401, spec["error"](401, "Unable to authenticate you"), {}
            elif state.get("rate_limited", {}).get(operation, 0) > 0:
                state["rate_limited"][operation] -= 1
                reset = int(time.time()) + 1
                status, body, extra = 429, spec["error"](429, "Too many requests"), {}
            save(state_path, state)
            headers = {"Content-Type": "application/json", **spec["rate_headers"](reset), **extra}
            violation = spec["check"](operation, url.path, query, status, headers, body)
            entry = {"time": time.time(), "server": "api", "operation": operation, "path": url.path,
                     "query": query, "status": status, "reset": reset}
            if violation:
                entry["violation"] = violation
            log(log_path, entry)
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def metadata_handler(cloud, instance, state_path, log_path):
    spec = CLOUDS[cloud]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if cloud == "azure":
                url = urllib.parse.urlsplit(self.path)
                status, text = azure_metadata_answer(
                    url.path, urllib.parse.parse_qs(url.query), self.headers, instance, load(state_path))
            else:
                status, text = spec["metadata"](self.path, instance, load(state_path))
            log(log_path, {"time": time.time(), "server": "metadata", "path": self.path, "status": status})
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main():
    role = sys.argv[1]
    if role == "api":
        cloud, state_path, log_path, cert_dir = sys.argv[2:6]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), api_handler(cloud, state_path, log_path))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(cert_dir, "server.crt"), os.path.join(cert_dir, "server.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    elif role == "metadata":
        cloud, instance, state_path, log_path = sys.argv[2:6]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), metadata_handler(cloud, instance, state_path, log_path))
    else:
        sys.exit(f"unknown role {role!r}")
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
