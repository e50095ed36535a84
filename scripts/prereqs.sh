#!/usr/bin/env bash
# Checks, in seconds, what the whole test suite needs on this machine, and
# installs what is missing when it can (as root, or with passwordless sudo,
# from Debian's packages); otherwise it stops and names the command to run.
# scripts/test.sh runs it first; run it alone to prepare a machine.
#
#   Go      at least the version go.mod names (never installed here)
#   openssl makes the test CA of the metadata-document tests
#   Chromium the browser tests (CHROMIUM_PATH, default /usr/bin/chromium)
#   Node.js >= 20 and npm, for the JavaScript clients' tests
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
	echo "prerequisites: $*" >&2
	exit 1
}

# version_ge A B: is dotted version A at least B?
version_ge() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# --- Go: the toolchain itself cannot be installed from here.
want_go=$(awk '$1 == "go" { print $2; exit }' go.mod)
command -v go >/dev/null 2>&1 ||
	fail "Go $want_go or newer is not installed: see https://go.dev/doc/install, then run this again"
have_go=$(go env GOVERSION | sed 's/^go//')
version_ge "$have_go" "$want_go" ||
	fail "Go $have_go is older than $want_go (go.mod): install Go $want_go or newer"

# --- What Debian's packages provide.
chromium=${CHROMIUM_PATH:-/usr/bin/chromium}
node_ok() {
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
		version_ge "$(node --version | sed 's/^v//')" 20
}
missing=()
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ -x "$chromium" ] || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
	if [ -n "${CHROMIUM_PATH:-}" ] && [ ! -x "$chromium" ]; then
		fail "CHROMIUM_PATH=$chromium is not an executable; unset it to use Debian's chromium"
	fi
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo)
		else
			fail "missing: ${missing[*]}; install them with: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
		fi
	fi
	command -v apt-get >/dev/null 2>&1 ||
		fail "missing: ${missing[*]}, and this is not a Debian-like system: install them with your package manager"
	echo "prerequisites: installing ${missing[*]} from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	[ -x "$chromium" ] || fail "chromium was installed but is not at $chromium; set CHROMIUM_PATH"
fi

node_ok || fail "Node.js 20 or newer with npm is needed (found: $(node --version 2>/dev/null || echo none)); Debian 12's own nodejs is 18: install Node.js 20+ (e.g. from NodeSource) and run this again"

echo "prerequisites: go $have_go, node $(node --version), npm $(npm --version), $("$chromium" --version 2>/dev/null | head -n 1), $(openssl version | cut -d' ' -f1-2)"
