package pgstore

import (
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// InitSite stores one first key and the settings not yet stored, in one
// transaction, however many instances start together, and keeps what an
// operator already stored.
func TestInitSite(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	ctx := testContext(t)
	if err := a.PutSetting(ctx, "kept", []byte("operator")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][]store.StoredKey, 2)
	for i, s := range []*Site{a, b} {
		wg.Go(func() {
			k, _ := newKey(t, string(rune('a'+i)), time.Now())
			var err error
			got[i], err = s.InitSite(ctx, k, map[string][]byte{"kept": []byte("initial"), "new": []byte("on")})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(got[0]) != 1 || len(got[1]) != 1 || got[0][0].KID != got[1][0].KID {
		t.Fatalf("InitSite of two instances = %v, %v; want the one same first key", got[0], got[1])
	}
	for k, want := range map[string]string{"kept": "operator", "new": "on"} {
		if v, err := b.GetSetting(ctx, k); err != nil || string(v) != want {
			t.Errorf("setting %s = %q, %v; want %q", k, v, err, want)
		}
	}
}
