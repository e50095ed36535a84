package pgstore

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

// changes collects what a watcher is told.
type changes struct {
	mu  sync.Mutex
	got []store.Change
	ch  chan store.Change
}

func watch(t *testing.T, s *Site) *changes {
	c := &changes{ch: make(chan store.Change, 1024)}
	stop := s.Watch(func(ch store.Change) {
		c.mu.Lock()
		c.got = append(c.got, ch)
		c.mu.Unlock()
		c.ch <- ch
	})
	t.Cleanup(stop)
	return c
}

// await waits for want, skipping other changes, for at most limit: the
// bound the product promises, not a measure of it.
func (c *changes) await(t *testing.T, want store.Change, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case got := <-c.ch:
			if got == want {
				return
			}
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("no change %d within %v; got %v", want, limit, c.got)
		}
	}
}

// drain forgets what has arrived so far.
func (c *changes) drain() {
	for {
		select {
		case <-c.ch:
		default:
			return
		}
	}
}

// grantAt stores a grant with one access token at s.
func grantAt(t *testing.T, s *Site, code string) (grantID, token string) {
	t.Helper()
	return grantOfAt(t, s, code, "")
}

// grantOfAt stores a grant of subject with one access token at s.
func grantOfAt(t *testing.T, s *Site, code, subject string) (grantID, token string) {
	t.Helper()
	ctx := testContext(t)
	now := time.Now().UTC()
	if err := s.PutCode(ctx, code, &store.Code{Request: store.AuthRequest{ClientID: "app"}, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	grantID, token = "grant-"+code, "token-"+code
	err := s.RedeemCode(ctx, code, func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return &store.Grant{ID: grantID, ClientID: "app", CreatedAt: now, Identity: store.Identity{Subject: subject}},
			[]store.IssuedToken{{Hash: token, Token: &store.Token{Kind: store.TokenAccess,
				GrantID: grantID, ClientID: "app", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return grantID, token
}

// TestWatchAcrossPools: what one instance changes, another is told of, by
// kind; a site's watchers hear nothing of another site.
func TestWatchAcrossPools(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	other, err := connect(t, dsn).Site(testContext(t), "https://other.example", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	seen := watch(t, b)
	otherSeen := watch(t, other)
	seen.await(t, store.ChangeAll, 5*time.Second) // the listener's first connection
	seen.drain()
	otherSeen.drain()
	ctx := testContext(t)

	grantID, _ := grantAt(t, a, "c1")
	if err := a.RevokeGrant(ctx, grantID); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeTokens, time.Second)
	k := store.StoredKey{KID: "k1", JWK: []byte(`{"kty":"EC","d":"x"}`), CreatedAt: time.Now(), SignFrom: time.Now()}
	if err := a.RotateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeKeys, time.Second)
	if err := a.PutSetting(ctx, "mcp_connections", []byte("off")); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeSettings, time.Second)
	if err := a.SaveCatalog(ctx, []byte(`{"items":[]}`)); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeCatalog, time.Second)
	otherSeen.mu.Lock()
	defer otherSeen.mu.Unlock()
	for _, c := range otherSeen.got {
		if c != store.ChangeAll {
			t.Errorf("another site's watcher was told of change %d", c)
		}
	}
}

// TestDisconnectAnnounced: a person's whole connection ended at one
// instance is told to the other, as any revocation is, and the other reads
// every grant of it revoked.
func TestDisconnectAnnounced(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	seen := watch(t, b)
	seen.await(t, store.ChangeAll, 5*time.Second) // the listener's first connection
	seen.drain()
	ctx := testContext(t)
	_, first := grantOfAt(t, a, "d1", "ada")
	_, second := grantOfAt(t, a, "d2", "ada")
	if n, err := a.DisconnectClient(ctx, "app", "ada"); err != nil || n != 2 {
		t.Fatalf("DisconnectClient = %d, %v", n, err)
	}
	seen.await(t, store.ChangeTokens, time.Second)
	for _, tok := range []string{first, second} {
		if _, g, err := b.GetToken(ctx, tok); err != nil || !g.Revoked {
			t.Errorf("the other instance reads the grant as %+v, %v", g, err)
		}
	}
}

// TestWatchReconnects: a listener whose connection is killed listens
// again and tells its watchers to refresh everything, since what was
// announced meanwhile is lost; notifications then flow again.
func TestWatchReconnects(t *testing.T) {
	dsn := pgcluster.Database(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	seen := watch(t, b)
	seen.await(t, store.ChangeAll, 5*time.Second)
	ctx := testContext(t)
	if _, err := a.pool.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeAll, 5*time.Second)
	grantID, _ := grantAt(t, a, "c2")
	if err := a.RevokeGrant(ctx, grantID); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeTokens, time.Second)
}

// TestWatchPolls: a change that came with no notification is found by
// the version poll.
func TestWatchPolls(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 100 * time.Millisecond
	dsn := pgcluster.Database(t)
	a, b := openSite(t, dsn), openSite(t, dsn)
	seen := watch(t, b)
	seen.await(t, store.ChangeAll, 5*time.Second)
	time.Sleep(3 * pollEvery) // the poll has seen the version once
	seen.drain()
	// A version bump as a notification lost on the way would leave it.
	if _, err := a.pool.db.Exec(testContext(t), `UPDATE sites SET version = version + 1 WHERE id = $1`, a.id); err != nil {
		t.Fatal(err)
	}
	seen.await(t, store.ChangeAll, 2*time.Second)
}

// BenchmarkRevocationReach measures how long a revocation at one
// instance takes to reach another's watcher: from before the revoking
// call to the notification's delivery, commit included. It reports the
// median and p99.
func BenchmarkRevocationReach(b *testing.B) {
	dsn := pgcluster.Database(b)
	ctx := context.Background()
	pa, err := Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pa.Close()
	pb, err := Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pb.Close()
	a, err := pa.Site(ctx, testIssuer, testSecret)
	if err != nil {
		b.Fatal(err)
	}
	sb, err := pb.Site(ctx, testIssuer, testSecret)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan store.Change, 16)
	stop := sb.Watch(func(c store.Change) { got <- c })
	defer stop()
	for c := range got {
		if c == store.ChangeAll {
			break
		}
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = "g" + itoa(i)
		if _, err := a.pool.db.Exec(ctx, `INSERT INTO grants (site_id, id, client_id, created_at, data)
			VALUES ($1, $2, 'app', now(), '{}')`, a.id, ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for _, id := range ids {
		start := time.Now()
		if err := a.RevokeGrant(ctx, id); err != nil {
			b.Fatal(err)
		}
		for c := range got {
			if c == store.ChangeTokens {
				break
			}
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
}
