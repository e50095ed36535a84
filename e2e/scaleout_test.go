package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// pair is two Caddy instances of one school on one database, behind a
// plain Caddy load balancer that owns the issuer's origin.
type scaleOut struct {
	a, b, lb *gateway
	addrA    string // host:port of A
	addrB    string
	dsn      string
	o        *oauthLoad // signed in through the balancer
	catalog  string     // the catalog feed's file
}

func startScaleOut(t *testing.T, extra string) *scaleOut {
	t.Helper()
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	pa, pb, plb := freePort(t), freePort(t), freePort(t)
	redirect := "https://load-app.example/callback"
	extra = vendorBlock("Load App", "load-app", redirect, "member", loadScope) + "\t\trate_limit off\n" + extra
	s := &scaleOut{dsn: dsn, addrA: fmt.Sprintf("127.0.0.1:%d", pa), addrB: fmt.Sprintf("127.0.0.1:%d", pb)}
	// The catalog comes from a file the test can change: the school's own
	// feed, copied.
	_, _, feed := get(t, sch.URL+"/catalog.json")
	s.catalog = filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(s.catalog, feed, 0o600); err != nil {
		t.Fatal(err)
	}
	block := func(port int) string {
		return strings.Replace(pgSiteBlock(port, plb, sch.URL, dsn, extra),
			"catalog "+sch.URL+"/catalog.json", "catalog "+s.catalog, 1)
	}
	// A first: it makes the schema and the first key, B finds them.
	s.a = startGateway(t, t.TempDir(), block(pa))
	s.b = startGateway(t, t.TempDir(), block(pb))
	s.lb = startBalancer(t, t.TempDir(), plb, s.addrA, s.addrB)
	s.o = signInForLoad(t, s.lb.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	return s
}

// grant runs authorize and the code exchange at the given instances.
func (s *scaleOut) grant(t *testing.T, authorizeAt, exchangeAt string) tokenPair {
	t.Helper()
	return grantAt(t, s.o, authorizeAt, exchangeAt)
}

// grantAt runs o's authorize and code exchange at the given instances
// (host:port).
func grantAt(t *testing.T, o *oauthLoad, authorizeAt, exchangeAt string) tokenPair {
	t.Helper()
	ctx := t.Context()
	code, verifier, r := o.at(authorizeAt).authorize(ctx)
	if code == "" {
		t.Fatalf("authorize at %s: %v", authorizeAt, r)
	}
	r = o.at(exchangeAt).exchange(ctx, code, verifier)
	p, ok := r.pair()
	if !ok {
		t.Fatalf("exchange at %s: %v", exchangeAt, r)
	}
	return p
}

// protectedStatus is the status of the Account API called with token at
// the instance at addr.
func (s *scaleOut) protectedStatus(t *testing.T, addr, token string) int {
	t.Helper()
	r := s.o.at(addr).request(t.Context(), http.MethodPost, "/account/graphql", token, viewerQuery, nil)
	if r.err != nil {
		t.Fatalf("protected request at %s: %v", addr, r.err)
	}
	return r.status
}

// refusedWithin polls the protected resource at addr until token is
// refused, for at most limit, and returns how long it took.
func (s *scaleOut) refusedWithin(t *testing.T, addr, token string, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		if st := s.protectedStatus(t, addr, token); st == http.StatusUnauthorized {
			return time.Since(began)
		} else if st != http.StatusOK {
			t.Fatalf("protected request at %s: %d", addr, st)
		}
		if time.Since(began) > limit {
			t.Fatalf("a token revoked at the other instance still works at %s after %v", addr, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScaleOut: two instances of one school on one database behave as
// one, whichever instance a request reaches.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes")
	}
	s := startScaleOut(t, "")
	ctx := t.Context()

	t.Run("code from A exchanged at B", func(t *testing.T) {
		p := s.grant(t, s.addrA, s.addrB)
		for _, addr := range []string{s.addrA, s.addrB, strings.TrimPrefix(s.lb.URL, "http://")} {
			if st := s.protectedStatus(t, addr, p.Access); st != http.StatusOK {
				t.Errorf("the token at %s: %d", addr, st)
			}
		}
	})

	t.Run("revocation at A reaches B", func(t *testing.T) {
		p := s.grant(t, s.addrA, s.addrA)
		if st := s.protectedStatus(t, s.addrB, p.Access); st != http.StatusOK { // B caches it
			t.Fatalf("before revocation at B: %d", st)
		}
		if r := s.o.at(s.addrA).revoke(ctx, p.Refresh); r.status != http.StatusOK {
			t.Fatalf("revoke at A: %v", r)
		}
		took := s.refusedWithin(t, s.addrB, p.Access, time.Second)
		t.Logf("refused at B %v after the revocation at A answered", took)
	})

	t.Run("revocation reaches B with its listener killed", func(t *testing.T) {
		p := s.grant(t, s.addrA, s.addrA)
		if st := s.protectedStatus(t, s.addrB, p.Access); st != http.StatusOK {
			t.Fatalf("before revocation at B: %d", st)
		}
		conn, err := pgx.Connect(ctx, s.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
			t.Fatal(err)
		}
		if r := s.o.at(s.addrA).revoke(ctx, p.Refresh); r.status != http.StatusOK {
			t.Fatalf("revoke at A: %v", r)
		}
		// The listener comes back within a second and refreshes all; at
		// worst the token cache's 5 s bound it.
		took := s.refusedWithin(t, s.addrB, p.Access, 6*time.Second)
		t.Logf("refused at B %v after the revocation at A answered, listeners killed", took)
	})

	t.Run("one refresh at A and B at once, within the grace window", func(t *testing.T) {
		for range 3 {
			p := s.grant(t, s.addrA, s.addrA)
			var wg sync.WaitGroup
			replies := make([]reply, 2)
			for i, addr := range []string{s.addrA, s.addrB} {
				wg.Go(func() { replies[i] = s.o.at(addr).refresh(ctx, p.Refresh) })
			}
			wg.Wait()
			for i, r := range replies {
				if _, ok := r.pair(); !ok {
					t.Errorf("refresh %d: %v", i, r)
				}
			}
		}
	})

	t.Run("key rotated at A is published at B", func(t *testing.T) {
		idA := s.grant(t, s.addrA, s.addrA).IDToken
		idB := s.grant(t, s.addrB, s.addrB).IDToken
		r := postJSON(t, "http://"+s.a.AdminAddr+"/schoolgate/keys/rotate", map[string]any{"issuer": s.lb.URL})
		if r.status != http.StatusOK {
			t.Fatalf("rotate at A: %d %s", r.status, r.body)
		}
		kid, _ := jsonOf(t, r.body)["kid"].(string)
		deadline := time.Now().Add(time.Second)
		for !slices.Contains(kids(t, "http://"+s.addrB), kid) {
			if time.Now().After(deadline) {
				t.Fatalf("B's JWKS lacks %s a second after the rotation at A", kid)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Either instance's keys verify either's ID tokens.
		for _, addr := range []string{s.addrA, s.addrB} {
			keys := oidc.NewRemoteKeySet(ctx, "http://"+addr+"/.well-known/jwks.json")
			v := oidc.NewVerifier(s.lb.URL, keys, &oidc.Config{ClientID: "load-app", SupportedSigningAlgs: []string{oidc.ES256}})
			for name, raw := range map[string]string{"A's": idA, "B's": idB} {
				if _, err := v.Verify(ctx, raw); err != nil {
					t.Errorf("%s ID token with %s keys: %v", name, addr, err)
				}
			}
		}
	})

	t.Run("catalog refreshed at A is searched at B", func(t *testing.T) {
		raw, err := os.ReadFile(s.catalog)
		if err != nil {
			t.Fatal(err)
		}
		var feed map[string]any
		if err := json.Unmarshal(raw, &feed); err != nil {
			t.Fatal(err)
		}
		courses, _ := feed["courses"].([]any)
		if len(courses) == 0 {
			t.Fatal("the demo feed has no courses")
		}
		courses[0].(map[string]any)["title"] = "Zyzzyva Light Masterclass"
		raw, _ = json.Marshal(feed)
		if err := os.WriteFile(s.catalog, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		r := postJSON(t, "http://"+s.a.AdminAddr+"/schoolgate/catalog/refresh", map[string]any{"issuer": s.lb.URL})
		if r.status != http.StatusOK {
			t.Fatalf("catalog refresh at A: %d %s", r.status, r.body)
		}
		deadline := time.Now().Add(3 * time.Second)
		for !strings.Contains(callTool(t, "http://"+s.addrB+"/mcp", "search_catalog", map[string]any{"query": "zyzzyva"}), "Zyzzyva") {
			if time.Now().After(deadline) {
				t.Fatal("B's search_catalog does not find the course three seconds after A's refresh")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("switch turned off at A shows at B", func(t *testing.T) {
		authMD := func() string {
			_, _, body := get(t, "http://"+s.addrB+"/auth.md")
			return string(body)
		}
		if !strings.Contains(authMD(), "currently **on**") {
			t.Fatal("B's auth.md does not say MCP connections are on")
		}
		r := postJSON(t, "http://"+s.a.AdminAddr+"/schoolgate/mcp-connections", map[string]any{"issuer": s.lb.URL, "enabled": false})
		if r.status != http.StatusOK {
			t.Fatalf("switch off at A: %d %s", r.status, r.body)
		}
		deadline := time.Now().Add(2 * time.Second)
		for strings.Contains(authMD(), "currently **on**") {
			if time.Now().After(deadline) {
				t.Fatal("B's documents still say on two seconds after A switched off")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// B reads the switch from the database where it gates access.
		_, _, body := get(t, "http://"+s.b.AdminAddr+"/schoolgate/mcp-connections?issuer="+url.QueryEscape(s.lb.URL))
		if jsonOf(t, body)["enabled"] != false {
			t.Errorf("B's switch: %s", body)
		}
	})

	// Last: it forgets the student's consent to the application, which the
	// subtests above rely on.
	t.Run("disconnect at A ends both devices' grants at B", func(t *testing.T) {
		devices := []tokenPair{s.grant(t, s.addrA, s.addrA), s.grant(t, s.addrB, s.addrB)}
		for i, p := range devices {
			if st := s.protectedStatus(t, s.addrB, p.Access); st != http.StatusOK { // B caches it
				t.Fatalf("device %d before the disconnect at B: %d", i+1, st)
			}
		}
		_, _, body := get(t, "http://"+s.b.AdminAddr+"/schoolgate/grants?issuer="+url.QueryEscape(s.lb.URL))
		var counts struct {
			Clients []struct {
				ClientID string `json:"client_id"`
				People   int    `json:"people"`
				Grants   int    `json:"grants"`
			} `json:"clients"`
		}
		if err := json.Unmarshal(body, &counts); err != nil {
			t.Fatal(err)
		}
		for _, c := range counts.Clients {
			if c.ClientID == "load-app" && (c.People != 1 || c.Grants < 2) {
				t.Errorf("B counts %d people by %d grants, want one person", c.People, c.Grants)
			}
		}
		r := postJSON(t, "http://"+s.a.AdminAddr+"/schoolgate/grants/revoke",
			map[string]any{"issuer": s.lb.URL, "client_id": "load-app", "subject": "member-1"})
		if ended, _ := jsonOf(t, r.body)["grants_ended"].(float64); r.status != http.StatusOK || ended < 2 {
			t.Fatalf("revoke at A: %d %s", r.status, r.body)
		}
		for i, p := range devices {
			took := s.refusedWithin(t, s.addrB, p.Access, time.Second)
			t.Logf("device %d refused at B %v after the disconnect at A answered", i+1, took)
			if r := s.o.at(s.addrB).refresh(ctx, p.Refresh); r.status != http.StatusBadRequest || r.oauthErr() != "invalid_grant" {
				t.Errorf("device %d's refresh at B: %v", i+1, r)
			}
		}
		// The approval is forgotten: the next authorization asks again.
		if code, _, r := s.o.at(s.addrB).authorize(ctx); code != "" || r.status != http.StatusOK {
			t.Errorf("authorize after the disconnect: %v, want the consent page", r)
		}
	})
}

// TestScaleOutRefreshReplay: a refresh token rotated at A and used again
// at B after the grace window is refused and ends the grant everywhere.
func TestScaleOutRefreshReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes")
	}
	s := startScaleOut(t, "\t\trefresh_grace 1s\n")
	ctx := t.Context()
	p := s.grant(t, s.addrA, s.addrA)
	r := s.o.at(s.addrA).refresh(ctx, p.Refresh)
	next, ok := r.pair()
	if !ok {
		t.Fatalf("refresh at A: %v", r)
	}
	time.Sleep(1500 * time.Millisecond) // past the grace window
	r = s.o.at(s.addrB).refresh(ctx, p.Refresh)
	if r.status != http.StatusBadRequest || r.oauthErr() != "invalid_grant" {
		t.Fatalf("the old refresh token at B: %v", r)
	}
	for _, addr := range []string{s.addrA, s.addrB} {
		s.refusedWithin(t, addr, next.Access, 6*time.Second)
	}
}

// TestScaleOutNoGrace: with refresh_grace 0, one refresh token sent to A
// and B at once is rotated once; the other use is a replay that ends the
// grant at both.
func TestScaleOutNoGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes")
	}
	s := startScaleOut(t, "\t\trefresh_grace 0\n")
	ctx := t.Context()
	for range 3 {
		p := s.grant(t, s.addrA, s.addrA)
		var wg sync.WaitGroup
		replies := make([]reply, 2)
		for i, addr := range []string{s.addrA, s.addrB} {
			wg.Go(func() { replies[i] = s.o.at(addr).refresh(ctx, p.Refresh) })
		}
		wg.Wait()
		won, replayed := 0, 0
		var next tokenPair
		for _, r := range replies {
			if q, ok := r.pair(); ok {
				won, next = won+1, q
			} else if r.status == http.StatusBadRequest && r.oauthErr() == "invalid_grant" {
				replayed++
			}
		}
		if won != 1 || replayed != 1 {
			t.Fatalf("two uses of one refresh token without grace: %v, %v", replies[0], replies[1])
		}
		for _, addr := range []string{s.addrA, s.addrB} {
			s.refusedWithin(t, addr, next.Access, 6*time.Second)
		}
	}
}
