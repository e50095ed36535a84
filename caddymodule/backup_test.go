package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/boltstore"
)

// The backup route copies a serving school's store to a file that opens
// as that store, one school or all; a store that cannot copy itself (a
// database) is refused with the way to back it up.
func TestBackupRoute(t *testing.T) {
	ts := newTestSite(t, nil)
	app := &App{sites: map[string]*site{ts.g.Issuer: ts.site}}
	prev := activeApp
	activeApp = func() (any, error) { return app, nil }
	defer func() { activeApp = prev }()
	dir := t.TempDir()
	for _, tt := range []struct {
		name, body string
		file       string
	}{
		{"one school", `{"issuer":"https://school.example","file":"` + filepath.Join(dir, "one.db") + `"}`, filepath.Join(dir, "one.db")},
		{"every school", `{"all":true,"dir":"` + dir + `"}`, filepath.Join(dir, "school.example.db")},
	} {
		rec := httptest.NewRecorder()
		if err := handleBackup(rec, httptest.NewRequest("POST", "/schoolgate/backup", strings.NewReader(tt.body))); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var out struct {
			Backups []adminapi.BackupResult `json:"backups"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Backups) != 1 || out.Backups[0].Bytes == 0 {
			t.Fatalf("%s: %s", tt.name, rec.Body)
		}
		copy, err := boltstore.Open(tt.file, time.Second)
		if err != nil {
			t.Fatalf("%s: the copy does not open: %v", tt.name, err)
		}
		if _, _, err := copy.GetToken(context.Background(), hashOf(ts.token)); err != nil {
			t.Errorf("%s: the token is not in the copy: %v", tt.name, err)
		}
		copy.Close()
	}
	for _, tt := range []struct{ name, body string }{
		{"no file", `{"issuer":"https://school.example"}`},
		{"no dir", `{"all":true}`},
		{"unknown school", `{"issuer":"https://other.example","file":"` + filepath.Join(dir, "x.db") + `"}`},
	} {
		if err := handleBackup(httptest.NewRecorder(), httptest.NewRequest("POST", "/schoolgate/backup", strings.NewReader(tt.body))); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
