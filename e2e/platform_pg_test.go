package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/pgstore"
)

// pgPlatform is two Caddy processes, A and B, each on its own port, that
// serve the schools of one PostgreSQL registry behind school_platform;
// and the registry as a deploy tool writes to it, on the same database.
type pgPlatform struct {
	dsn      string
	reg      *pgstore.Registry
	upstream string    // the demo school every record fronts
	addrs    [2]string // A's and B's host:port
	admins   [2]string
}

// instance names A and B in messages.
var instance = [2]string{"A", "B"}

const platformRedirect = "https://load-app.example/callback"

// platformOrigin is the issuer of the school name: each school its own
// host, on port 80, which the test's clients send to A or B.
func platformOrigin(name string) string { return "http://" + name + ".test" }

// startPgPlatform starts the demo school, a database and A and B on it
// with max_active; the registry is empty.
func startPgPlatform(t *testing.T, maxActive int) *pgPlatform {
	t.Helper()
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	pool, err := pgstore.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	reg, err := pgstore.OpenRegistry(context.Background(), pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	p := &pgPlatform{dsn: dsn, reg: reg, upstream: sch.URL}
	for i := range p.addrs {
		port := freePort(t)
		p.addrs[i] = fmt.Sprintf("127.0.0.1:%d", port)
		p.admins[i] = startPlatform(t, t.TempDir(), "", fmt.Sprintf(
			"http://:%d {\n\tschool_platform {\n\t\tregistry postgres %q {\n\t\t\tkey_secret %s\n\t\t}\n\t\tmax_active %d\n\t}\n}\n",
			port, dsn, pgKeySecret, maxActive))
	}
	// Both have read the (empty) registry once a host of no school is
	// answered 404 rather than 503.
	p.waitAtBoth(t, "A and B to read the registry", p.noSchoolAt("nobody.test"))
	return p
}

// put writes the record of the school name, in front of the demo school,
// with the load app as a vendor and no rate limits (the load test sends
// many requests from one address).
func (p *pgPlatform) put(t *testing.T, name string, disabled bool, extra string) {
	t.Helper()
	scopes, _ := json.Marshal(strings.Fields(loadScope))
	vendor := fmt.Sprintf(`,"vendors":[{"name":"Load App","client_id":"load-app","redirect_uris":[%q],"audience":"member","scopes":%s}],"rate_limits":{"off":true}`,
		platformRedirect, scopes)
	putSchool(t, p.reg, platformOrigin(name), p.upstream, disabled, vendor+extra)
}

// discovery fetches the discovery document of host at instance i.
func (p *pgPlatform) discovery(i int, host string) (response, error) {
	return tryFetch(platformClient(p.addrs[i]), "http://"+host+"/.well-known/oauth-authorization-server")
}

// servedAs is a condition for waitAtBoth: host's discovery names the
// school name as its issuer.
func (p *pgPlatform) servedAs(name, host string) func(i int) (bool, string) {
	return func(i int) (bool, string) {
		r, err := p.discovery(i, host)
		if err != nil {
			return false, err.Error()
		}
		var doc struct{ Issuer string }
		_ = json.Unmarshal(r.body, &doc)
		return r.status == 200 && doc.Issuer == platformOrigin(name), fmt.Sprintf("%d %.200s", r.status, bytes.TrimSpace(r.body))
	}
}

// noSchoolAt is a condition for waitAtBoth: host is answered the plain
// 404 of no school, with nothing of any school.
func (p *pgPlatform) noSchoolAt(host string) func(i int) (bool, string) {
	return func(i int) (bool, string) {
		r, err := p.discovery(i, host)
		if err != nil {
			return false, err.Error()
		}
		plain := strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") && r.header.Get("WWW-Authenticate") == "" &&
			r.header.Get("Access-Control-Allow-Origin") == "" && !strings.Contains(string(r.body), ".test")
		return r.status == 404 && plain, fmt.Sprintf("%d %v %.200s", r.status, r.header, bytes.TrimSpace(r.body))
	}
}

// waitAtBoth polls cond at A and B until it holds at both at once, for
// at most 10 s, and fails with what each showed last. An instance applies
// a registry change within about a second (the bench measures how long);
// the deadline is for a loaded machine, not a bound the test asserts.
func (p *pgPlatform) waitAtBoth(t *testing.T, what string, cond func(i int) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seen [2]string
		ok := true
		for i := range p.addrs {
			var done bool
			done, seen[i] = cond(i)
			ok = ok && done
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s; last seen at A: %s; at B: %s", what, seen[0], seen[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signIn signs the student in at the school name through A and approves
// the load app: the returned client asks either instance for tokens.
func (p *pgPlatform) signIn(t *testing.T, name string) *oauthLoad {
	t.Helper()
	return signInThrough(t, p.addrs[0], platformOrigin(name), "load-app", platformRedirect, loadScope,
		"student@demo.school", "student")
}

// protected is the Account API called with token at instance i.
func (p *pgPlatform) protected(ctx context.Context, o *oauthLoad, i int, token string) reply {
	return o.at(p.addrs[i]).request(ctx, http.MethodPost, "/account/graphql", token, viewerQuery, nil)
}

// jwks is the school name's key set at instance i, as "kid x y" lines,
// sorted.
func (p *pgPlatform) jwks(t *testing.T, i int, name string) []string {
	t.Helper()
	r := fetch(t, platformClient(p.addrs[i]), platformOrigin(name)+"/.well-known/jwks.json")
	var set struct {
		Keys []struct{ Kid, X, Y string }
	}
	if r.status != 200 || json.Unmarshal(r.body, &set) != nil || len(set.Keys) == 0 {
		t.Fatalf("%s's JWKS at %s: %d %s", name, instance[i], r.status, r.body)
	}
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.Kid+" "+k.X+" "+k.Y)
	}
	slices.Sort(out)
	return out
}

// TestPlatformPostgres: two Caddy processes serve the schools of one
// PostgreSQL registry as one: a school written to the registry is served
// at both without a reload, with one set of keys and tokens good at
// either; a change, a disable and a removal apply at both; and while
// schools are added, changed and removed, requests at both under load
// are each answered by the school of their host, without a 5xx.
func TestPlatformPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Caddy processes on PostgreSQL")
	}
	p := startPgPlatform(t, 10)
	stable := []string{"s1", "s2", "s3"}
	for _, name := range stable {
		p.put(t, name, false, "")
	}
	for _, name := range stable {
		p.waitAtBoth(t, name+" to serve", p.servedAs(name, name+".test"))
	}
	signedIn := map[string]*oauthLoad{}
	for _, name := range stable {
		signedIn[name] = p.signIn(t, name)
	}

	t.Run("a token minted through A is good at B", func(t *testing.T) {
		ctx := t.Context()
		o := signedIn["s1"]
		first := grantAt(t, o, p.addrs[0], p.addrs[0])
		if r := p.protected(ctx, o, 1, first.Access); r.status != http.StatusOK {
			t.Errorf("A's access token at B: %v", r)
		}
		r := o.at(p.addrs[1]).refresh(ctx, first.Refresh)
		next, ok := r.pair()
		if !ok || next.Refresh == first.Refresh || next.Access == first.Access {
			t.Fatalf("A's refresh token at B: %v", r)
		}
		for i := range p.addrs {
			if r := p.protected(ctx, o, i, next.Access); r.status != http.StatusOK {
				t.Errorf("the access token refreshed at B, at %s: %v", instance[i], r)
			}
		}
		// One set of keys, in the database: the same at A and B, and
		// another school's own.
		a, b := p.jwks(t, 0, "s1"), p.jwks(t, 1, "s1")
		if !slices.Equal(a, b) {
			t.Errorf("s1's JWKS at A %v, at B %v", a, b)
		}
		for _, k := range p.jwks(t, 1, "s2") {
			if slices.Contains(a, k) {
				t.Errorf("s2 publishes s1's key %s", k)
			}
		}
		// Another school refuses s1's token.
		if r := p.protected(ctx, signedIn["s2"], 1, next.Access); r.status != http.StatusUnauthorized {
			t.Errorf("s1's token at s2: %v", r)
		}
		// Revoked at A, refused at B (which has it cached).
		if r := o.at(p.addrs[0]).revoke(ctx, next.Refresh); r.status != http.StatusOK {
			t.Fatalf("revoke at A: %v", r)
		}
		p.waitAtBoth(t, "the revoked token to be refused", func(i int) (bool, string) {
			r := p.protected(ctx, o, i, next.Access)
			return r.status == http.StatusUnauthorized, r.String()
		})
	})

	t.Run("schools built at A and B at once have one key", func(t *testing.T) {
		twins := []string{"t1", "t2", "t3", "t4"}
		for _, name := range twins {
			p.put(t, name, false, "")
		}
		// Listed, not built yet: the admin API builds nothing.
		p.waitAtBoth(t, "the new schools to be listed", func(i int) (bool, string) {
			sites := platformSites(t, p.admins[i])
			for _, name := range twins {
				if sites[platformOrigin(name)].State != "idle" {
					return false, fmt.Sprintf("%s: %+v", name, sites[platformOrigin(name)])
				}
			}
			return true, ""
		})
		// Each school's first requests come to A and B together: both
		// build it, and find or make its first key.
		sets := make([][2][]string, len(twins))
		var wg sync.WaitGroup
		for n, name := range twins {
			for i := range p.addrs {
				wg.Go(func() { sets[n][i] = p.jwks(t, i, name) })
			}
		}
		wg.Wait()
		for n, name := range twins {
			if len(sets[n][0]) != 1 || !slices.Equal(sets[n][0], sets[n][1]) {
				t.Errorf("%s built at once at A and B: keys %v at A, %v at B", name, sets[n][0], sets[n][1])
			}
		}
	})

	t.Run("a school's first requests, at A and B at once, are for its documents", func(t *testing.T) {
		feed := readDemoFeed(t, p.upstream+"/catalog.json")
		p.put(t, "docs", false, fmt.Sprintf(`,"catalog":%q`, p.upstream+"/catalog.json"))
		p.waitAtBoth(t, "the school with a catalog to be listed", func(i int) (bool, string) {
			st := platformSites(t, p.admins[i])[platformOrigin("docs")].State
			return st == "idle", st
		})
		// Both build it and wait for its catalog: one imports the feed,
		// the other imports it too or reads what the first stored.
		var wg sync.WaitGroup
		for i := range p.addrs {
			wg.Go(func() { checkWholeDocuments(t, platformClient(p.addrs[i]), platformOrigin("docs"), feed) })
		}
		wg.Wait()
	})

	t.Run("changed, disabled, removed and unknown at both", func(t *testing.T) {
		ctx := t.Context()
		p.waitAtBoth(t, "www.s3.test to be no school's", p.noSchoolAt("www.s3.test"))
		rec, err := p.reg.Get(ctx, platformOrigin("s3"))
		if err != nil {
			t.Fatal(err)
		}
		rec.Hosts = append(rec.Hosts, "www.s3.test")
		if _, err := p.reg.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		p.waitAtBoth(t, "s3's alias host to serve", p.servedAs("s3", "www.s3.test"))

		p.put(t, "off", false, "")
		p.put(t, "gone", false, "")
		p.waitAtBoth(t, "off to serve", p.servedAs("off", "off.test"))
		p.waitAtBoth(t, "gone to serve", p.servedAs("gone", "gone.test"))
		keys := p.jwks(t, 0, "off")
		p.put(t, "off", true, "")
		if err := p.reg.Remove(ctx, platformOrigin("gone")); err != nil {
			t.Fatal(err)
		}
		p.waitAtBoth(t, "the disabled school to answer 404", p.noSchoolAt("off.test"))
		p.waitAtBoth(t, "the removed school to answer 404", p.noSchoolAt("gone.test"))
		p.waitAtBoth(t, "an unknown host to answer 404", p.noSchoolAt("nobody.test"))
		// Enabled again, the school has the keys it had: its data stayed.
		p.put(t, "off", false, "")
		p.waitAtBoth(t, "the school enabled again to serve", p.servedAs("off", "off.test"))
		for i := range p.addrs {
			if got := p.jwks(t, i, "off"); !slices.Equal(got, keys) {
				t.Errorf("the school enabled again at %s has keys %v, had %v", instance[i], got, keys)
			}
		}
	})

	t.Run("a change made while the listeners were cut reaches both", func(t *testing.T) {
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, p.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		// A's and B's listening connections (the test's pool listens to
		// nothing).
		var cut int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`).Scan(&cut); err != nil || cut != 2 {
			t.Fatalf("cut %d listening connections: %v", cut, err)
		}
		p.put(t, "late", false, "")
		p.waitAtBoth(t, "the school written while the listeners were cut to serve", p.servedAs("late", "late.test"))
		if err := p.reg.Remove(ctx, platformOrigin("late")); err != nil {
			t.Fatal(err)
		}
		p.waitAtBoth(t, "its removal to apply", p.noSchoolAt("late.test"))
	})

	t.Run("under load while the registry changes", func(t *testing.T) {
		loadWhileChanging(t, p, stable, signedIn)
	})
}

// platformLoad tallies the load test's requests and keeps the first
// answers that break its rules.
type platformLoad struct {
	counts   sync.Map // kind -> *atomic.Int64
	mu       sync.Mutex
	problems []string
	failures int
}

func (l *platformLoad) count(kind string) {
	n, _ := l.counts.LoadOrStore(kind, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

func (l *platformLoad) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures++
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// loadChurn are the schools the load test adds, changes, gives an alias,
// disables and removes while it runs; each step is one registry write.
var loadChurn = []string{"c0", "c1", "c2", "c3"}

// loadWhileChanging hammers discovery and the Account API of the stable
// schools, and discovery of the changing ones, at A and B, while the
// registry is written to: no answer is a 5xx or a transport error, every
// discovery document is the issuer of the host asked, a stable school
// (changed meanwhile, never removed) never answers 404, its token is
// accepted by it and refused by another school.
func loadWhileChanging(t *testing.T, p *pgPlatform, stable []string, signedIn map[string]*oauthLoad) {
	ctx := t.Context()
	tokens := map[string]string{}
	hosts := map[string][]string{} // each stable school's, its aliases too
	for _, name := range stable {
		tokens[name] = grantAt(t, signedIn[name], p.addrs[0], p.addrs[1]).Access
		rec, err := p.reg.Get(ctx, platformOrigin(name))
		if err != nil {
			t.Fatal(err)
		}
		hosts[name] = rec.HostKeys()
	}
	// Discovery requests, whatever their host, share one keep-alive
	// client: its pool is per instance (toHost dials the instance).
	anyHost := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var l platformLoad
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Deferred too: a failed write ends the test, and the workers with it.
	stopWorkers := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopWorkers()
	for w := range 6 {
		wg.Go(func() {
			for n := w; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := n % 2
				name := stable[(n/2)%len(stable)]
				switch (n / 6) % 4 {
				case 0:
					host := hosts[name][(n/24)%len(hosts[name])]
					l.discovery(ctx, p, i, &oauthLoad{origin: "http://" + host, http: anyHost}, name, false)
				case 1:
					l.protected(ctx, p, i, signedIn[name], name, tokens[name], http.StatusOK)
				case 2:
					other := stable[((n/2)+1)%len(stable)]
					l.protected(ctx, p, i, signedIn[other], other, tokens[name], http.StatusUnauthorized)
				case 3:
					c := loadChurn[(n/2)%len(loadChurn)]
					host := c + ".test"
					if n%3 == 0 {
						host = "www." + host
					}
					l.discovery(ctx, p, i, &oauthLoad{origin: "http://" + host, http: anyHost}, c, true)
				}
			}
		})
	}
	// The writer: each changing school goes through its five states in
	// turn, one write every 40 ms among them; the stable s2 is changed
	// (rebuilt while in use) every fifth write.
	began := time.Now()
	writes := 0
	for step := 0; time.Since(began) < 4*time.Second; step++ {
		writes++
		c := loadChurn[step%len(loadChurn)]
		switch (step / len(loadChurn)) % 5 {
		case 0:
			p.put(t, c, false, "")
		case 1:
			p.put(t, c, false, fmt.Sprintf(`,"code_ttl":"%ds"`, 30+step))
		case 2:
			rec, err := p.reg.Get(ctx, platformOrigin(c))
			if err != nil {
				t.Fatal(err)
			}
			rec.Hosts = []string{"www." + c + ".test"}
			if _, err := p.reg.Put(ctx, rec); err != nil {
				t.Fatal(err)
			}
		case 3:
			p.put(t, c, true, "")
		case 4:
			if err := p.reg.Remove(ctx, platformOrigin(c)); err != nil {
				t.Fatal(err)
			}
		}
		if step%5 == 4 {
			p.put(t, "s2", false, fmt.Sprintf(`,"code_ttl":"%ds"`, 30+step))
			writes++
		}
		time.Sleep(40 * time.Millisecond)
	}
	stopWorkers()

	var summary []string
	l.counts.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(summary)
	t.Logf("%d registry writes; requests: %s", writes, strings.Join(summary, ", "))
	if l.failures > 0 {
		t.Errorf("%d answers broke the rules, the first ones:\n%s", l.failures, strings.Join(l.problems, "\n"))
	}
	// Every kind of request ran.
	for _, kind := range []string{"discovery 200", "protected 200", "protected 401"} {
		if _, ok := l.counts.Load(kind); !ok {
			t.Errorf("no %s during the load", kind)
		}
	}

	// Once the writes stop, A and B agree with the registry.
	for _, c := range loadChurn {
		rec, err := p.reg.Get(ctx, platformOrigin(c))
		for _, host := range []string{c + ".test", "www." + c + ".test"} {
			switch {
			case err != nil || rec.Disabled || (host != c+".test" && len(rec.Hosts) == 0):
				p.waitAtBoth(t, host+" to answer 404 as the registry says", p.noSchoolAt(host))
			default:
				p.waitAtBoth(t, host+" to serve "+c+" as the registry says", p.servedAs(c, host))
			}
		}
	}
}

// discovery asks instance i for host's discovery document (o's origin)
// and checks that it is the school name's; churned, the school may be
// absent (404).
func (l *platformLoad) discovery(ctx context.Context, p *pgPlatform, i int, o *oauthLoad, name string, churned bool) {
	r := o.at(p.addrs[i]).request(ctx, http.MethodGet, "/.well-known/oauth-authorization-server", "", "", nil)
	l.count(fmt.Sprintf("discovery %d", r.status))
	var doc struct{ Issuer string }
	switch {
	case r.err != nil || r.status >= 500:
		l.problem("%s at %s: %v", o.origin, instance[i], r)
	case r.status == http.StatusNotFound && churned:
	case r.status != http.StatusOK || json.Unmarshal(r.body, &doc) != nil:
		l.problem("%s at %s: %v", o.origin, instance[i], r)
	case doc.Issuer != platformOrigin(name):
		l.problem("%s at %s answered as %s", o.origin, instance[i], doc.Issuer)
	}
}

// protected calls the Account API of the school name (o's origin) at
// instance i with token and checks the answer is want.
func (l *platformLoad) protected(ctx context.Context, p *pgPlatform, i int, o *oauthLoad, name, token string, want int) {
	r := p.protected(ctx, o, i, token)
	l.count(fmt.Sprintf("protected %d", r.status))
	if r.err != nil || r.status != want {
		l.problem("the Account API of %s at %s, want %d: %v", name, instance[i], want, r)
	}
}

// TestPlatformPostgresMaxActive: with max_active 2 and five schools in
// use, each school is let go of and built again between its requests, at
// A and B, and its keys come back from the database: a token minted
// before is accepted, refreshed, and the key set is the one it had; its
// documents, asked for first, are whole and cacheable.
func TestPlatformPostgresMaxActive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Caddy processes on PostgreSQL")
	}
	p := startPgPlatform(t, 2)
	ctx := t.Context()
	names := []string{"m1", "m2", "m3", "m4", "m5"}
	feed := readDemoFeed(t, p.upstream+"/catalog.json")
	for _, name := range names {
		p.put(t, name, false, fmt.Sprintf(`,"catalog":%q`, p.upstream+"/catalog.json"))
	}
	for _, name := range names {
		p.waitAtBoth(t, name+" to serve", p.servedAs(name, name+".test"))
	}
	signedIn := map[string]*oauthLoad{}
	pairs := map[string]tokenPair{}
	keys := map[string][]string{}
	for _, name := range names {
		signedIn[name] = p.signIn(t, name)
		pairs[name] = grantAt(t, signedIn[name], p.addrs[0], p.addrs[0])
		keys[name] = p.jwks(t, 0, name)
	}
	for round := range 2 {
		for _, name := range names {
			o := signedIn[name]
			// Four other schools were used since this one: it was let go
			// of at both.
			for i, admin := range p.admins {
				sites := platformSites(t, admin)
				active := 0
				for _, s := range sites {
					if s.State == "active" {
						active++
					}
				}
				if st := sites[platformOrigin(name)].State; st != "idle" || active > 2 {
					t.Errorf("round %d, before %s at %s: it is %s, %d schools active", round, name, instance[i], st, active)
				}
			}
			// Its first request built again is for its documents: whole
			// and cacheable at once, from the catalog its store kept (or,
			// let go of before its first import, after that import).
			for i := range p.addrs {
				checkWholeDocuments(t, platformClient(p.addrs[i]), platformOrigin(name), feed)
			}
			for i := range p.addrs {
				if r := p.protected(ctx, o, i, pairs[name].Access); r.status != http.StatusOK {
					t.Errorf("round %d: %s's token built again at %s: %v", round, name, instance[i], r)
				}
				if got := p.jwks(t, i, name); !slices.Equal(got, keys[name]) {
					t.Errorf("round %d: %s built again at %s has keys %v, had %v", round, name, instance[i], got, keys[name])
				}
			}
			r := o.at(p.addrs[1]).refresh(ctx, pairs[name].Refresh)
			next, ok := r.pair()
			if !ok {
				t.Fatalf("round %d: %s's refresh at B: %v", round, name, r)
			}
			pairs[name] = next
		}
	}
}
