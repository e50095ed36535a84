package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestPurgeBatches: a backlog larger than a batch goes entirely, batch by
// batch, and what is live stays.
func TestPurgeBatches(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	d := &store.Dump{}
	token := func(hash, grantID string, exp time.Time) store.IssuedToken {
		return store.IssuedToken{Hash: hash, Token: &store.Token{Kind: store.TokenAccess,
			GrantID: grantID, ClientID: "app-1", ExpiresAt: exp}}
	}
	d.Grants = append(d.Grants, &store.Grant{ID: "live", ClientID: "app-1"})
	d.Tokens = append(d.Tokens, token("live-token", "live", epoch.Add(time.Hour)))
	for i := range 2*purgeBatch + 100 {
		d.Tokens = append(d.Tokens, token(fmt.Sprintf("old-%d", i), "live", epoch.Add(-time.Hour)))
	}
	for i := range purgeBatch + 100 {
		id := fmt.Sprintf("revoked-%d", i)
		d.Grants = append(d.Grants, &store.Grant{ID: id, ClientID: "app-1", Revoked: true})
		d.Tokens = append(d.Tokens, token("of-"+id, id, epoch.Add(time.Hour)))
	}
	if err := s.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.PurgeExpired(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	if n := count(t, dsn, `SELECT count(*) FROM tokens`); n != 1 {
		t.Errorf("%d tokens left, want the live one", n)
	}
	if n := count(t, dsn, `SELECT count(*) FROM grants`); n != 1 {
		t.Errorf("%d grants left, want the live one", n)
	}
}
