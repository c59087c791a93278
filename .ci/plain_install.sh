#!/usr/bin/env bash
# CI step: the install a user does with the pip their Python's venv bundles, NO pip
# upgrade (`make install` upgrades pip first and hid a missing dependency once), then
# a real page read over loopback with that install. Needs no network but the package
# index. The venv and the loopback server are removed on exit, pass or fail.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
PYTHON="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS
"$PYTHON" -m venv "$work/venv"
echo "plain install with bundled $("$work/venv/bin/python" -m pip --version | cut -d' ' -f1-2)"
status=0
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check . \
    >"$work/pip.log" 2>&1 || status=$?
# pip's warnings are shown (e.g. "does not provide the extra"), index-location noise is not.
grep -v "is ignored: it is neither a file nor a directory" "$work/pip.log" || true
if [ "$status" -ne 0 ]; then
    echo "plain install failed: pip exited with $status" >&2
    exit "$status"
fi
# Run from outside the checkout so the installed package, not ./deepsearch, is imported.
(cd "$work" && "$work/venv/bin/python" "$repo/.ci/read_over_loopback.py")
(cd "$work" && "$work/venv/bin/deepsearch" --version >/dev/null)
echo "plain install path ok in $((SECONDS - started))s"
