package authserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
)

// A backup taken while the school serves opens as the store of that
// moment: tokens issued before it are valid in the copy, tokens issued
// after it are not there.
func TestBoltBackupWhileServing(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	_, before := f.exchange(f.code(authParams(c), v), v)
	access, _ := before["access_token"].(string)
	var buf bytes.Buffer
	if err := f.store.(store.Backuper).Backup(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	v2, c2 := pkce()
	_, after := f.exchange(f.code(authParams(c2), v2), v2)
	later, _ := after["access_token"].(string)

	path := filepath.Join(t.TempDir(), "restored.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	restored, err := boltstore.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	srv, err := New(context.Background(), f.srv.cfg, restored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.LookupAccessToken(context.Background(), access); err != nil {
		t.Errorf("a token issued before the backup, in the copy: %v", err)
	}
	if _, err := srv.LookupAccessToken(context.Background(), later); err == nil {
		t.Error("a token issued after the backup is in the copy")
	}
	if got, want := srv.Keys().KIDs(), f.srv.Keys().KIDs(); len(got) != len(want) || got[0] != want[0] {
		t.Errorf("keys in the copy %v, want %v", got, want)
	}
}
