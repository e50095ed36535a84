package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
	"github.com/schoolgate/schoolgate/store/storetest"
)

func TestIsLocal(t *testing.T) {
	for _, tc := range []struct {
		dsn   string
		local bool
	}{
		{"host=/var/run/postgresql dbname=x", true},
		{"postgres://u@localhost/x", true},
		{"postgres://u@127.0.0.1:5432/x", true},
		{"postgres://u@[::1]:5432/x", true},
		{"postgres://u@db.internal:5432/x", false},
		{"postgres://u@10.0.0.7:5432/x", false},
	} {
		cfg, err := pgxpool.ParseConfig(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := isLocal(cfg); got != tc.local {
			t.Errorf("%s: local %v, want %v", tc.dsn, got, tc.local)
		}
	}
}

// On a database of this machine, a write and a read are charged to their
// request while it is paused (charge.go); on another machine's, nothing.
func TestLocalDatabaseCharges(t *testing.T) {
	s := openSite(t, pgcluster.Database(t))
	if !s.pool.local {
		t.Fatal("the test cluster counts as another machine's")
	}
	w := &storetest.Waiter{}
	ctx := store.WithWaiter(context.Background(), w)
	if err := s.PutCode(ctx, "charged-code", &store.Code{Request: store.AuthRequest{ClientID: "app"}, ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListClients(ctx); err != nil {
		t.Fatal(err)
	}
	if w.Charged <= 0 || w.ChargedAwake || w.Depth != 0 {
		t.Errorf("charged %v, awake %v, left paused %d deep", w.Charged, w.ChargedAwake, w.Depth)
	}
	s.pool.local = false
	far := &storetest.Waiter{}
	if _, err := s.ListClients(store.WithWaiter(context.Background(), far)); err != nil {
		t.Fatal(err)
	}
	if far.Charged != 0 {
		t.Errorf("a remote database's call charged %v", far.Charged)
	}
}
