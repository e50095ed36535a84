#!/usr/bin/env bash
# Runs the gateway (Caddy with the schoolgate modules) in front of the
# bundled demo school: http://127.0.0.1:8080, data under ./data.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p bin data
echo "building caddy and the demo school (the first build takes a few minutes)..."
go build -o bin/caddy ./cmd/caddy
go build -o bin/demoschool ./cmd/demoschool

# The school verifies the gateway's identity assertion (identity_assertion
# in Caddyfile.example): its issuer, its JWKS and the audience it signs for,
# the upstream's origin.
issuer="${ISSUER:-http://127.0.0.1:8080}"
bin/demoschool -listen "${SCHOOL_LISTEN:-127.0.0.1:9080}" \
	-assertion-issuer "$issuer" \
	-assertion-jwks "$issuer/.well-known/jwks.json" \
	-assertion-audience "${UPSTREAM:-http://127.0.0.1:9080}" &
school=$!
trap 'kill "$school" 2>/dev/null || true' EXIT INT TERM

echo "demo school on http://127.0.0.1:9080, gateway on http://127.0.0.1:8080"
echo "sign in as student@demo.school / student (member) or owner@demo.school / owner (operator)"
bin/caddy run --config Caddyfile.example --adapter caddyfile
