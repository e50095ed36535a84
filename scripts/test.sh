#!/usr/bin/env bash
# Runs the whole test suite: formatting and vet, Go unit and end-to-end
# tests (a real Caddy in front of the demo school), a smoke run of the
# benchmark harness, bounded fuzzing, the
# JavaScript end-to-end tests with real client libraries and a browser, and
# the MCP conformance suite's server scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 ./...

echo "== benchmark harness (smoke: seconds, no thresholds; keeps it from rotting)"
go run ./bench -smoke

echo "== fuzz (bounded)"
fuzztime="${FUZZTIME:-20s}"
while read -r pkg target; do
	[ -n "$pkg" ] || continue
	echo "-- $pkg $target"
	go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
	d=$(dirname "$f")
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r fn; do echo "./${d#./} $fn"; done
done | sort -u)

if [ -f e2e/js/package.json ]; then
	echo "== JavaScript end-to-end tests"
	(cd e2e/js && npm ci --no-audit --no-fund --loglevel=error && npm test)
fi

if [ -f e2e/conformance/package.json ]; then
	# The official MCP conformance suite's server scenarios against /mcp, on
	# a Node 22 that npm installs (the npm package "node"; see its run.mjs).
	echo "== MCP conformance (server scenarios)"
	(cd e2e/conformance && npm ci --no-audit --no-fund --loglevel=error && npm test)
fi
