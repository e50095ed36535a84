package authserver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/boltstore"
)

func TestExportBolt(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v)
	status, _ := f.exchange(code, v)
	if status != 200 {
		t.Fatalf("token exchange: %d", status)
	}
	ctx := context.Background()
	if err := f.store.SaveCatalog(ctx, []byte(`{"items":[]}`)); err != nil {
		t.Fatal(err)
	}
	// The running gateway holds the file: the export is refused.
	if _, err := boltstore.Export(f.path); err == nil || !strings.Contains(err.Error(), "stop Caddy first") {
		t.Fatalf("export of a locked file: %v", err)
	}
	f.store.Close()
	d, err := boltstore.Export(f.path)
	if err != nil {
		t.Fatal(err)
	}
	n := d.Counts()
	if n["keys"] != 1 || n["grants"] != 1 || n["tokens"] != 2 || n["codes"] != 1 || n["consents"] != 1 ||
		n["settings"] < 1 || string(d.Catalog) != `{"items":[]}` {
		t.Errorf("dump counts %v, catalog %q", n, d.Catalog)
	}
	if !d.Codes[0].Code.Used || d.Codes[0].Code.GrantID != d.Grants[0].ID {
		t.Errorf("the redeemed code lost its used flag: %+v", d.Codes[0].Code)
	}
	if _, err := boltstore.Export(filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("export of a missing file succeeded")
	}
}
