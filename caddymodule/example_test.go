package caddymodule

import (
	"bytes"
	"os"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// The bundled Caddyfile is what a newcomer starts from: it must be in
// caddy fmt's form (Caddy warns at every start otherwise) and adapt
// without warnings.
func TestCaddyfileExample(t *testing.T) {
	raw, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	if formatted := caddyfile.Format(raw); !bytes.Equal(formatted, raw) {
		t.Errorf("Caddyfile.example is not formatted; run: go run ./cmd/caddy fmt --overwrite Caddyfile.example")
	}
	_, warnings, err := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}.Adapt(raw, map[string]any{"filename": "Caddyfile.example"})
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("adapt warning: %s", w.String())
	}
}
