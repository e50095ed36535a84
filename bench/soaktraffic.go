package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The soak's traffic (soak.go): paced workers, so that the machine (2
// cores, shared) stays able to serve the one flood at full speed.
//
//   - discovery of schools spread over the whole registry, alternating
//     instances: more schools than max_active, so schools are built and
//     let go of all the time;
//   - discovery of the schools the writer adds, 2 s after their write;
//   - token traffic on the token schools: a code (consent, authorize) at
//     one instance, exchanged at the other, its access token used at the
//     Account API, its refresh token rotated now and then, and a token of
//     one school presented to another (it must be refused);
//   - MCP search_catalog as a member and anonymously;
//   - one school flooded by closed-loop clients (anonymous MCP) at
//     instance a, more than the school's queue of the fair share (128)
//     holds, each waiting Retry-After when refused: what fair share
//     refuses is counted;
//   - the writer: every second a school added, one changed (an alias host
//     and login_url) and one the writer added removed.

// soakTraffic is the soak's clients and what they hold.
type soakTraffic struct {
	s            *soakRun
	tally        *soakTally
	tokenSchools []string
	flood        string
	mu           sync.Mutex // guards added
	added        []*churnSchool
	grants       [][]*soakGrant // by token worker: each rotates only its own
	member       []soakMember
}

// soakGrant is a grant the token traffic holds: its latest tokens and
// the refresh token its last rotation replaced.
type soakGrant struct {
	school          string
	access, refresh string
	rotatedOut      string
	rotatedAt       time.Time
}

type soakMember struct{ school, access string }

const soakTokenWorkers = 2

func newSoakTraffic(s *soakRun) *soakTraffic {
	t := &soakTraffic{s: s, tally: newSoakTally(), flood: schoolName(s.cfg.schools - 1),
		grants: make([][]*soakGrant, soakTokenWorkers)}
	for i := range s.cfg.tokenSchools {
		t.tokenSchools = append(t.tokenSchools, schoolName(i))
	}
	return t
}

// prepare asks every instance for every school's discovery once, so
// that each holds max_active built schools from the first sample, as a
// host that has run a while does (the traffic alone fills them in about
// two minutes, inside the warm-up, but the plot would start with that
// ramp); then it gets the member MCP worker's tokens and waits for the
// catalogs the searches need.
func (t *soakTraffic) prepare() error {
	ctx := context.Background()
	a := t.s.instances[0]
	for _, c := range t.s.instances {
		soakProgress("instance %s: every school asked once", c.name)
		err := forEach(ctx, t.s.cfg.schools, 16, func(ctx context.Context, i int) error {
			name := schoolName(i)
			status, body, err := soakDo(ctx, c.client, http.MethodGet, "http://"+t.s.host(name)+discoveryPath, "", "", nil)
			if err == nil && (status != http.StatusOK || discoveryIssuer(body) != t.s.issuer(name)) {
				err = fmt.Errorf("%s: HTTP %d issuer %q", name, status, discoveryIssuer(body))
			}
			return err
		})
		if err != nil {
			return c.failure(err)
		}
	}
	for _, name := range append(t.tokenSchools[:min(10, len(t.tokenSchools))], t.flood) {
		o := &oauthClient{origin: t.s.issuer(name), http: a.noRedirect}
		tok, err := memberToken(ctx, o)
		if err != nil {
			return a.failure(fmt.Errorf("a member token of %s: %v", name, err))
		}
		t.member = append(t.member, soakMember{school: name, access: tok.Access})
		deadline := time.Now().Add(time.Minute)
		for {
			status, body, err := soakDo(ctx, a.client, http.MethodPost, "http://"+t.s.host(name)+"/mcp", "", searchCall, mcpHeaders)
			if err == nil && status == http.StatusOK && strings.Contains(string(body), "course-") {
				break
			}
			if time.Now().After(deadline) {
				return a.failure(fmt.Errorf("%s never served its catalog: HTTP %d %v %.200s", name, status, err, body))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// start launches every worker until ctx ends.
func (t *soakTraffic) start(ctx context.Context, wg *sync.WaitGroup) {
	paced := func(pace time.Duration, fn func(ctx context.Context, k int)) {
		wg.Go(func() {
			for k := 0; ctx.Err() == nil; k++ {
				fn(ctx, k)
				select {
				case <-ctx.Done():
				case <-time.After(pace):
				}
			}
		})
	}
	for w := range 2 {
		paced(20*time.Millisecond, func(ctx context.Context, k int) { t.spread(ctx, t.instance(w+k)) })
	}
	paced(50*time.Millisecond, func(ctx context.Context, k int) { t.churned(ctx, t.instance(k)) })
	for w := range soakTokenWorkers {
		paced(50*time.Millisecond, func(ctx context.Context, k int) { t.tokenStep(ctx, w, k) })
	}
	paced(50*time.Millisecond, func(ctx context.Context, k int) {
		m := t.member[k%len(t.member)]
		t.search(ctx, "mcp search (member)", t.instance(k).client, m.school, m.access)
	})
	paced(50*time.Millisecond, func(ctx context.Context, k int) {
		t.search(ctx, "mcp search (anonymous)", t.instance(k).client, t.tokenSchools[rand.IntN(len(t.tokenSchools))], "")
	})
	flood := clientFor(t.s.port, t.s.cfg.flooders)
	for range t.s.cfg.flooders {
		wg.Go(func() {
			for ctx.Err() == nil {
				status := t.search(ctx, "flood: mcp search (anonymous), one school", flood, t.flood, "")
				if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
					// As a client that reads Retry-After (at least 1 s).
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		})
	}
	wg.Go(func() { t.writer(ctx) })
}

func (t *soakTraffic) instance(k int) *platformCaddy {
	return t.s.instances[k%len(t.s.instances)]
}

// soakDo sends one request and reads its answer.
func soakDo(ctx context.Context, client *http.Client, method, url, token, body string, headers map[string]string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	// The school is named by the Host header alone, so that a client's
	// connections are one pool whatever the school, as a load balancer's
	// are: keyed by each school's host, they would be one idle connection
	// per school asked, thousands, held open by Caddy until its idle
	// timeout, and the open files sampled would be the bench's.
	req.Host, req.URL.Host = req.URL.Host, "instance.invalid"
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// The refusal's reason is in WWW-Authenticate: keep it with the body.
		raw = append([]byte(resp.Header.Get("WWW-Authenticate")+"\n"), raw...)
	}
	return resp.StatusCode, raw, err
}

// discoveryIssuer is the issuer a discovery answer names, "" if none.
func discoveryIssuer(body []byte) string {
	var doc struct {
		Issuer string `json:"issuer"`
	}
	_ = json.Unmarshal(body, &doc)
	return doc.Issuer
}

// spread asks a school of the whole registry for its discovery.
func (t *soakTraffic) spread(ctx context.Context, c *platformCaddy) {
	name := schoolName(rand.IntN(t.s.cfg.schools))
	status, body, err := soakDo(ctx, c.client, http.MethodGet, "http://"+t.s.host(name)+discoveryPath, "", "", nil)
	if ctx.Err() != nil {
		return
	}
	const kind = "discovery, any school"
	t.tally.answer(kind, status, err)
	if status == http.StatusOK && discoveryIssuer(body) != t.s.issuer(name) {
		t.tally.wrongSchool(kind, fmt.Sprintf("%s at %s answered issuer %q", name, c.name, discoveryIssuer(body)))
	}
	if status == http.StatusNotFound {
		t.tally.lostSchool(kind, fmt.Sprintf("%s at %s: 404", name, c.name))
	}
}

// churned asks a school the writer added, once visible, for its
// discovery: 404 is expected once its removal was sent.
func (t *soakTraffic) churned(ctx context.Context, c *platformCaddy) {
	t.mu.Lock()
	var visible []*churnSchool
	for _, s := range t.added {
		if time.Now().After(s.visible) {
			visible = append(visible, s)
		}
	}
	t.mu.Unlock()
	if len(visible) == 0 {
		return
	}
	s := visible[rand.IntN(len(visible))]
	status, body, err := soakDo(ctx, c.client, http.MethodGet, "http://"+t.s.host(s.name)+discoveryPath, "", "", nil)
	if ctx.Err() != nil {
		return
	}
	const kind = "discovery, a school added while running"
	t.tally.answer(kind, status, err)
	switch {
	case status == http.StatusNotFound && s.removed.Load():
		t.tally.count(&t.tally.expected404)
	case status == http.StatusNotFound:
		t.tally.lostSchool(kind, fmt.Sprintf("%s at %s: 404 before its removal", s.name, c.name))
	case status == http.StatusOK && discoveryIssuer(body) != t.s.issuer(s.name):
		t.tally.wrongSchool(kind, fmt.Sprintf("%s at %s answered issuer %q", s.name, c.name, discoveryIssuer(body)))
	}
}

// search sends MCP search_catalog to the school, with token or none,
// and returns the status.
func (t *soakTraffic) search(ctx context.Context, kind string, client *http.Client, school, token string) int {
	status, body, err := soakDo(ctx, client, http.MethodPost, "http://"+t.s.host(school)+"/mcp", token, searchCall, mcpHeaders)
	if ctx.Err() != nil {
		return 0
	}
	t.tally.answer(kind, status, err)
	if status == http.StatusOK && !strings.Contains(string(body), "course-") {
		t.tally.failure(kind, fmt.Sprintf("%s: a 200 without a course: %.200s", school, body))
	}
	return status
}

// tokenStep is one step of token worker w: a new grant on odd steps,
// the rotation of one of its grants on even ones, and a check that a
// token is refused by another school every tenth.
func (t *soakTraffic) tokenStep(ctx context.Context, w, k int) {
	mine := t.grants[w]
	switch {
	case k%10 == 9 && len(mine) > 0:
		t.crossSchool(ctx, mine[rand.IntN(len(mine))], t.instance(k))
	case k%2 == 0 && len(mine) > 0:
		t.rotate(ctx, mine[rand.IntN(len(mine))], t.instance(k))
	default:
		if g := t.newGrant(ctx, t.tokenSchools[rand.IntN(len(t.tokenSchools))], t.instance(k), t.instance(k+1)); g != nil {
			t.grants[w] = append(t.grants[w], g)
		}
	}
}

// newGrant gets a code at one instance, exchanges it at the other and
// uses the access token at the Account API; the ID token must name the
// school asked.
func (t *soakTraffic) newGrant(ctx context.Context, school string, at, exchangeAt *platformCaddy) *soakGrant {
	o := &oauthClient{origin: t.s.issuer(school), http: at.noRedirect}
	code, err := o.authorize(ctx)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		t.tally.answer("authorize (consent remembered)", 0, err)
		return nil
	}
	t.tally.answer("authorize (consent remembered)", http.StatusFound, nil)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code.code}, "redirect_uri": {benchRedirect},
		"client_id": {benchClientID}, "code_verifier": {code.verifier}, "resource": {o.origin}}
	tok, ok := t.tokenCall(ctx, "token: code exchange (at the other instance)", exchangeAt, school, form)
	if !ok {
		return nil
	}
	g := &soakGrant{school: school, access: tok.Access, refresh: tok.Refresh}
	t.use(ctx, "Account API (member token)", at, g, http.StatusOK)
	return g
}

// rotate exchanges the grant's refresh token and uses the new access
// token.
func (t *soakTraffic) rotate(ctx context.Context, g *soakGrant, at *platformCaddy) {
	tok, ok := t.tokenCall(ctx, "token: refresh", at, g.school, refreshForm(g.refresh))
	if !ok {
		return
	}
	g.rotatedOut, g.rotatedAt = g.refresh, time.Now()
	g.access, g.refresh = tok.Access, tok.Refresh
	t.use(ctx, "Account API (member token)", at, g, http.StatusOK)
}

// crossSchool presents a grant's access token to another school: a 200
// would be a token of one school honoured by another.
func (t *soakTraffic) crossSchool(ctx context.Context, g *soakGrant, at *platformCaddy) {
	other := t.tokenSchools[rand.IntN(len(t.tokenSchools))]
	if other == g.school {
		return
	}
	t.use(ctx, "Account API, another school's token (must be 401)", at, &soakGrant{school: other, access: g.access}, http.StatusUnauthorized)
}

// tokenCall posts form to the school's token endpoint at the instance
// and checks the answer: tokens, and an ID token, when there is one,
// issued by the school asked.
func (t *soakTraffic) tokenCall(ctx context.Context, kind string, at *platformCaddy, school string, form url.Values) (tokens, bool) {
	status, body, err := soakDo(ctx, at.client, http.MethodPost, t.s.issuer(school)+"/api/oauth/token", "", form.Encode(), nil)
	if ctx.Err() != nil {
		return tokens{}, false
	}
	t.tally.answer(kind, status, err)
	var tok tokens
	if status != http.StatusOK {
		if status != 0 && status < 500 {
			t.tally.failure(kind, fmt.Sprintf("%s at %s: HTTP %d %.200s", school, at.name, status, body))
		}
		return tokens{}, false
	}
	if json.Unmarshal(body, &tok) != nil || tok.Access == "" || tok.Refresh == "" {
		t.tally.failure(kind, fmt.Sprintf("%s at %s: no tokens in %.200s", school, at.name, body))
		return tokens{}, false
	}
	if tok.IDToken != "" {
		if iss := jwtIssuer(tok.IDToken); iss != t.s.issuer(school) {
			t.tally.wrongSchool(kind, fmt.Sprintf("%s at %s: an ID token of issuer %q", school, at.name, iss))
			return tokens{}, false
		}
	} else if form.Get("grant_type") == "authorization_code" {
		t.tally.failure(kind, fmt.Sprintf("%s at %s: no ID token for openid", school, at.name))
	}
	return tok, true
}

// use sends the grant's access token to its school's Account API and
// checks the status.
func (t *soakTraffic) use(ctx context.Context, kind string, at *platformCaddy, g *soakGrant, want int) {
	status, body, err := soakDo(ctx, at.client, http.MethodPost, "http://"+t.s.host(g.school)+"/account/graphql", g.access, viewerQuery, nil)
	if ctx.Err() != nil {
		return
	}
	t.tally.answer(kind, status, err)
	switch {
	case want == http.StatusUnauthorized && status == http.StatusOK:
		t.tally.wrongSchool(kind, fmt.Sprintf("%s at %s honoured another school's token", g.school, at.name))
	case status != want && status != 0 && status < 500:
		t.tally.failure(kind, fmt.Sprintf("%s at %s: HTTP %d (want %d) %.200s", g.school, at.name, status, want, body))
	}
}

// jwtIssuer is the iss claim of a JWT, unverified (the bench checks
// which school answered, not the signature), "" if it has none.
func jwtIssuer(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Iss string `json:"iss"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.Iss
}

// writer changes the registry every second: adds a school, changes a
// token school (an alias host added or taken away, and login_url), and
// removes the oldest added school still there once five are.
func (t *soakTraffic) writer(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	aliased := map[string]bool{}
	for step := 0; ; step++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Each write has its own context: one cut off by the end of the
		// run would be the bench's failure, not the registry's.
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		name := fmt.Sprintf("c%d", step)
		if _, err := t.s.reg.Put(wctx, t.s.record(name, nil, "")); err != nil {
			t.tally.failure("registry write", fmt.Sprintf("adding %s: %v", name, err))
		} else {
			t.mu.Lock()
			t.added = append(t.added, &churnSchool{name: name, visible: time.Now().Add(2 * time.Second)})
			t.mu.Unlock()
			t.tally.count(&t.tally.adds)
		}
		changed := t.tokenSchools[step%len(t.tokenSchools)]
		var hosts []string
		if !aliased[changed] {
			hosts = []string{t.s.host("alias-" + changed)}
		}
		if _, err := t.s.reg.Put(wctx, t.s.record(changed, hosts, fmt.Sprintf("/login?v=%d", step))); err != nil {
			t.tally.failure("registry write", fmt.Sprintf("changing %s: %v", changed, err))
		} else {
			aliased[changed] = !aliased[changed]
			t.tally.count(&t.tally.changes)
		}
		t.mu.Lock()
		var gone *churnSchool
		live := 0
		for _, s := range t.added {
			if !s.removed.Load() {
				live++
				if gone == nil && time.Now().After(s.visible) {
					gone = s
				}
			}
		}
		if live < 5 {
			gone = nil
		}
		if gone != nil {
			gone.removed.Store(true)
		}
		t.mu.Unlock()
		if gone != nil {
			if err := t.s.reg.Remove(wctx, t.s.issuer(gone.name)); err != nil {
				t.tally.failure("registry write", fmt.Sprintf("removing %s: %v", gone.name, err))
			} else {
				t.tally.count(&t.tally.removes)
			}
		}
		cancel()
		t.mu.Lock()
		// Forget removed schools long gone: the list stays short.
		if len(t.added) > 200 {
			t.added = t.added[len(t.added)-200:]
		}
		t.mu.Unlock()
	}
}
