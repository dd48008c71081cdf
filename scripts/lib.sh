#!/usr/bin/env bash
# Shared helpers for the scripts: the moto virtualenv and a persistent cargo target directory.

# Builds go to a target directory outside the clone when none is set, so fresh clones (CI) reuse
# what an earlier build on this machine left; it still works from nothing.
: "${CARGO_TARGET_DIR:=${HOME:-/root}/.cache/protokube/target}"
export CARGO_TARGET_DIR

MOTO_VERSION="5.2.5"

# ensure_moto: create .venv with moto[server] unless it is already there; sets MOTO_SERVER_BIN.
ensure_moto() {
  local venv=.venv
  MOTO_SERVER_BIN="$PWD/$venv/bin/moto_server"
  if [ -x "$MOTO_SERVER_BIN" ] && "$venv/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
    return 0
  fi
  echo "setting up $venv with moto[server]==$MOTO_VERSION" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
}
