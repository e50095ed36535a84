package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// TestSiteRows: a site's steps and clients read by its issuer without
// opening it; a school never started reads none and gets no sites row.
func TestSiteRows(t *testing.T) {
	ctx := testContext(t)
	s := openSite(t, pgcluster.Database(t))
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	step := store.Step{ClientID: "app", Name: "token", Reason: "verifier_mismatch", Error: "invalid_grant",
		Count: 2, First: at, Last: at}
	if err := s.AddSteps(ctx, []store.Step{step}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClient(ctx, &store.Client{ID: "app", Name: "The app", Audience: store.AudienceMember}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.SiteRows(ctx, s.issuer)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rows.QuerySteps(ctx, store.StepQuery{ClientID: "app"})
	if err != nil || len(got) != 1 || got[0].Count != 2 || got[0].Reason != step.Reason {
		t.Errorf("steps by issuer: %+v, %v", got, err)
	}
	if c, err := rows.GetClient(ctx, "app"); err != nil || c.Name != "The app" {
		t.Errorf("client by issuer: %+v, %v", c, err)
	}
	never, err := s.pool.SiteRows(ctx, "https://never.example")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := never.QuerySteps(ctx, store.StepQuery{ClientID: "app"}); err != nil || len(got) != 0 {
		t.Errorf("a school never started has steps: %+v, %v", got, err)
	}
	if _, err := never.GetClient(ctx, "app"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a school never started has a client: %v", err)
	}
	var n int
	if err := s.pool.db.QueryRow(ctx, `SELECT count(*) FROM sites WHERE issuer = 'https://never.example'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("reading its rows made %d sites rows (%v)", n, err)
	}
}
