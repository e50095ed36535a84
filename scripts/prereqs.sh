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
#   PostgreSQL initdb and postgres, for the PostgreSQL store's tests and the
#           benchmark, which start throwaway servers of their own (PG_BINDIR,
#           else pg_config --bindir, else /usr/lib/postgresql/*/bin);
#           installed without the server Debian's package would start
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
# pg_bindir prints where PostgreSQL's server is, looking where
# internal/pgcluster does.
pg_bindir() {
	local dir=
	if [ -n "${PG_BINDIR:-}" ]; then
		dir=$PG_BINDIR
	elif dir=$(pg_config --bindir 2>/dev/null) && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
		: # pg_config may also be a client-only package's, without a server
	else
		local d
		for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V); do
			[ -x "$d/initdb" ] && [ -x "$d/postgres" ] && dir=$d
		done
	fi
	[ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && echo "$dir"
}
missing=()
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ -x "$chromium" ] || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
pg_bindir >/dev/null || missing+=(postgresql)

if [ ${#missing[@]} -gt 0 ]; then
	if [ -n "${CHROMIUM_PATH:-}" ] && [ ! -x "$chromium" ]; then
		fail "CHROMIUM_PATH=$chromium is not an executable; unset it to use Debian's chromium"
	fi
	if [ -n "${PG_BINDIR:-}" ] && ! pg_bindir >/dev/null; then
		fail "PG_BINDIR=$PG_BINDIR has no initdb and postgres; unset it to use Debian's postgresql"
	fi
	# Debian's postgresql package creates and starts a server ("main", on
	# port 5432) unless told not to; the tests never use it.
	no_main_cluster=
	case " ${missing[*]} " in *" postgresql "*)
		no_main_cluster="sudo mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' | sudo tee -a /etc/postgresql-common/createcluster.conf && "
		;;
	esac
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo)
		else
			fail "missing: ${missing[*]}; install them with: ${no_main_cluster}sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
		fi
	fi
	command -v apt-get >/dev/null 2>&1 ||
		fail "missing: ${missing[*]}, and this is not a Debian-like system: install them with your package manager"
	echo "prerequisites: installing ${missing[*]} from Debian's packages"
	if [ -n "$no_main_cluster" ]; then
		conf=/etc/postgresql-common/createcluster.conf
		"${sudo[@]}" mkdir -p "$(dirname "$conf")"
		if "${sudo[@]}" grep -Eqs '^[[:space:]]*#?[[:space:]]*create_main_cluster[[:space:]]*=' "$conf"; then
			"${sudo[@]}" sed -i -E 's/^[[:space:]]*#?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' "$conf"
		else
			echo 'create_main_cluster = false' | "${sudo[@]}" tee -a "$conf" >/dev/null
		fi
	fi
	# Through env, since sudo drops the environment. postgresql-common
	# installs createcluster.conf with ucf, which must keep the one above
	# rather than ask.
	apt_env=(env DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1)
	"${sudo[@]}" "${apt_env[@]}" apt-get update -qq
	"${sudo[@]}" "${apt_env[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	[ -x "$chromium" ] || fail "chromium was installed but is not at $chromium; set CHROMIUM_PATH"
	if [ -n "$no_main_cluster" ]; then
		pg_bindir >/dev/null || fail "postgresql was installed but no initdb and postgres were found (pg_config --bindir, /usr/lib/postgresql/*/bin); set PG_BINDIR"
		# None should run; should one have been created anyway, it is
		# stopped, and stays stopped unless someone starts it.
		if command -v pg_lsclusters >/dev/null 2>&1; then
			pg_lsclusters -h 2>/dev/null | while read -r version cluster _ status _; do
				case $status in online*)
					echo "prerequisites: stopping the PostgreSQL server $version/$cluster that installing postgresql started"
					"${sudo[@]}" pg_ctlcluster "$version" "$cluster" stop </dev/null
					;;
				esac
			done
		fi
	fi
fi

node_ok || fail "Node.js 20 or newer with npm is needed (found: $(node --version 2>/dev/null || echo none)); Debian 12's own nodejs is 18: install Node.js 20+ (e.g. from NodeSource) and run this again"

echo "prerequisites: go $have_go, node $(node --version), npm $(npm --version), $("$chromium" --version 2>/dev/null | head -n 1), $(openssl version | cut -d' ' -f1-2), PostgreSQL $("$(pg_bindir)/postgres" --version | awk '{ print $3 }')"
