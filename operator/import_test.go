package operator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// A block whose state is elsewhere than the registry keeps its schools is
// refused, naming what to do.
func TestImportPlacement(t *testing.T) {
	bolt := &ImportedSchool{Name: "https://a.example", Data: t.TempDir(),
		Rec: registry.Record{Issuer: "https://a.example", Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}}
	if err := bolt.shape(ImportOptions{Kind: "postgres", Target: "postgres://x", KeySecret: "k"}); err == nil ||
		!strings.Contains(err.Error(), "migrate-store") {
		t.Errorf("a bbolt school into a postgres registry: %v", err)
	}
	if err := bolt.shape(ImportOptions{Kind: "dir", Target: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no school.db") {
		t.Errorf("a bbolt school whose file is not there: %v", err)
	}
	pg := &ImportedSchool{Name: "https://a.example", Postgres: &ImportedPostgres{DSN: "postgres://db/x", KeySecret: "k"},
		Rec: registry.Record{Issuer: "https://a.example", Config: json.RawMessage(`{"upstream":"http://127.0.0.1:9"}`)}}
	for _, tt := range []struct {
		o    ImportOptions
		want string
	}{
		{ImportOptions{Kind: "dir", Target: t.TempDir()}, "registry postgres"},
		{ImportOptions{Kind: "postgres", Target: "postgres://db/x", KeySecret: "other"}, "key_secret"},
		{ImportOptions{Kind: "postgres", Target: "postgres://db/y", KeySecret: "k"}, "DSN"},
		{ImportOptions{Kind: "postgres", Target: "postgres://db/x", KeySecret: "k"}, ""},
	} {
		err := pg.shape(tt.o)
		if (tt.want == "" && err != nil) || (tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want))) {
			t.Errorf("a postgres school into %s %s: %v, want %q", tt.o.Kind, tt.o.Target, err, tt.want)
		}
	}
	for _, o := range []ImportOptions{{Kind: "dir"}, {Kind: "postgres", Target: "x"}, {Kind: "postgres", Target: "x", KeySecret: "k", Move: true}, {Kind: "s3"}, {}} {
		if err := o.check(); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
