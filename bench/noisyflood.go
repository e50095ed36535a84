package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// The floods of -noisy: one setup's schools made ready, then, for each
// flood, rounds of the victim alone and the victim while the neighbour
// floods.

// noisySetup is one Caddy of the three schools under measurement.
type noisySetup struct {
	run   *noisyRun
	name  string
	caddy *platformCaddy
	port  int
	// floodClient is the neighbour's clients' (the victim's are in a
	// process of their own, noisyload.go).
	floodClient             *http.Client
	victimToken, floodToken string
	// codes are the neighbour's authorization codes for the token flood,
	// prepared outside the timing; mostUsed is the most one flooded phase
	// took, so that the next is given enough.
	codes    *pool[pendingCode]
	mostUsed int
}

// asker builds one kind of request; want is what its 200 must contain.
type asker struct {
	build func(ctx context.Context) (*http.Request, error)
	want  string
}

// requestSpec is a request that is the same every time: what the victim
// sends, described so that a process of its own can send it (-serve
// load, noisyload.go).
type requestSpec struct {
	Method, URL, Body string
	Header            map[string]string
	Want              string // what its 200 must contain
}

func (r requestSpec) asker() asker {
	return asker{want: r.Want, build: func(ctx context.Context) (*http.Request, error) {
		var body io.Reader
		if r.Body != "" {
			body = strings.NewReader(r.Body)
		}
		req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
		if err == nil {
			for k, v := range r.Header {
				req.Header.Set(k, v)
			}
		}
		return req, err
	}}
}

func (s *noisySetup) host(name string) string   { return schoolHost(name, s.port) }
func (s *noisySetup) issuer(name string) string { return schoolIssuer(name, s.port) }

func (s *noisySetup) discovery(name string) requestSpec {
	return requestSpec{Method: http.MethodGet, URL: "http://" + s.host(name) + discoveryPath, Want: fmt.Sprintf("%q", s.issuer(name))}
}

func (s *noisySetup) search(name string) requestSpec {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range mcpHeaders {
		h[k] = v
	}
	return requestSpec{Method: http.MethodPost, URL: "http://" + s.host(name) + "/mcp", Body: searchCall, Header: h, Want: "course-"}
}

func (s *noisySetup) protected(name, token string) requestSpec {
	return requestSpec{Method: http.MethodPost, URL: "http://" + s.host(name) + "/account/graphql", Body: viewerQuery,
		Header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}, Want: `"viewer"`}
}

// exchange redeems the next prepared code of the neighbour.
func (s *noisySetup) exchange() asker {
	issuer := s.issuer(neighbourSchool)
	return asker{want: `"id_token"`, build: func(ctx context.Context) (*http.Request, error) {
		c, ok := s.codes.take()
		if !ok {
			return nil, errPoolEmpty
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {benchRedirect},
			"client_id": {benchClientID}, "code_verifier": {c.verifier}, "resource": {issuer}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, issuer+"/api/oauth/token", strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return req, err
	}}
}

// ask sends one request of a and tallies its answer for worker w; it
// returns the status (0: none) and an error for no answer, or a 200
// without a.want. A request cut off by the end of its run is not
// tallied (load does not count it either).
func ask(ctx context.Context, client *http.Client, a asker, t *tally, w int) (int, error) {
	req, err := a.build(ctx)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.record(w, 0, false)
		}
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() == nil {
			t.record(w, 0, false)
		}
		return 0, err
	}
	t.record(w, resp.StatusCode, resp.Header.Get("Retry-After") != "")
	if resp.StatusCode == http.StatusOK && !strings.Contains(string(body), a.want) {
		t.markBad(w)
		return resp.StatusCode, fmt.Errorf("a 200 without %q: %.200s", a.want, body)
	}
	return resp.StatusCode, nil
}

// victimRequest is the victim's request: any answer but its 200 fails.
func victimRequest(client *http.Client, a asker, t *tally) request {
	return func(ctx context.Context, w int) error {
		status, err := ask(ctx, client, a, t, w)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("the victim answered HTTP %d", status)
		}
		return err
	}
}

// floodRequest is the neighbour's request: a refusal is an answer,
// tallied; only no answer, or a wrong 200, fails.
func (s *noisySetup) floodRequest(a asker, t *tally) request {
	return func(ctx context.Context, w int) error {
		_, err := ask(ctx, s.floodClient, a, t, w)
		return err
	}
}

// floods makes the setup's schools ready and measures each flood.
func (n *noisyRun) floods(name string, c *platformCaddy, port int) error {
	s := &noisySetup{run: n, name: name, caddy: c, port: port,
		floodClient: clientFor(port, n.cfg.floodC), codes: &pool[pendingCode]{}}
	defer s.floodClient.CloseIdleConnections()
	if err := s.ready(); err != nil {
		return c.failure(err)
	}
	for _, f := range n.cfg.floods {
		progress("noisy", "%s: the %s flood", name, f)
		row, err := s.measure(f)
		if err != nil {
			return c.failure(fmt.Errorf("the %s flood: %v", f, err))
		}
		n.rows = append(n.rows, row)
	}
	return nil
}

// ready waits for the three schools' discovery, for the catalogs a
// request will search, and gets the member tokens the requests need.
func (s *noisySetup) ready() error {
	cfg := s.run.cfg
	for _, name := range []string{victimSchool, neighbourSchool, thirdSchool} {
		if err := s.caddy.waitFor(s.host(name), time.Now(), time.Minute, func(status int, issuer string) bool {
			return status == http.StatusOK && issuer == s.issuer(name)
		}); err != nil {
			return err
		}
	}
	var searched []string
	if cfg.victim == floodMCP {
		searched = append(searched, victimSchool)
	}
	if slices.Contains(cfg.floods, floodMCP) {
		searched = append(searched, neighbourSchool)
	}
	for _, name := range searched {
		if err := s.until(time.Minute, s.search(name).asker()); err != nil {
			return fmt.Errorf("%s never served its catalog: %v", name, err)
		}
	}
	var err error
	if cfg.victim == "protected" {
		if s.victimToken, err = s.memberToken(victimSchool); err != nil {
			return err
		}
	}
	if slices.Contains(cfg.floods, floodLegacy) {
		if s.floodToken, err = s.memberToken(neighbourSchool); err != nil {
			return err
		}
	}
	return nil
}

// until repeats a until it answers 200 with its marker, for at most limit.
func (s *noisySetup) until(limit time.Duration, a asker) error {
	deadline := time.Now().Add(limit)
	for {
		status, err := ask(context.Background(), s.floodClient, a, newTally(1), 0)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("last: HTTP %d, %v", status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// memberToken is an access token of the school: the bench vendor's
// consent, then the code exchange.
func (s *noisySetup) memberToken(name string) (string, error) {
	o := &oauthClient{origin: s.issuer(name), http: s.floodClient}
	t, err := memberToken(context.Background(), o)
	if err != nil {
		return "", fmt.Errorf("a member token of %s: %v", name, err)
	}
	return t.Access, nil
}

// victimAsks is the victim's request, the same under every flood.
func (s *noisySetup) victimAsks() requestSpec {
	switch s.run.cfg.victim {
	case "protected":
		return s.protected(victimSchool, s.victimToken)
	case floodMCP:
		return s.search(victimSchool)
	}
	return s.discovery(victimSchool)
}

// floodAsker is the neighbour's request of flood f, and how it reads in
// the table.
func (s *noisySetup) floodAsker(f string) (asker, string) {
	c := s.run.cfg.floodC
	switch f {
	case floodMCP:
		return s.search(neighbourSchool).asker(), fmt.Sprintf("`/mcp` `tools/call search_catalog` (anonymous), %d clients, one address", c)
	case floodToken:
		return s.exchange(), fmt.Sprintf("token endpoint: code exchanges (codes prepared outside the timing), %d clients", c)
	case floodLegacy:
		return s.protected(neighbourSchool, s.floodToken).asker(),
			fmt.Sprintf("`/account/graphql` (member token) to a legacy server answering in %s, %d clients", s.run.cfg.legacyDelay, c)
	}
	return s.discovery(neighbourSchool).asker(), fmt.Sprintf("discovery, %d clients", c)
}

// floodSpec is the neighbour's request of flood f when it is the same
// every time (all but the token flood's exchanges, each its own code).
func (s *noisySetup) floodSpec(f string) (requestSpec, bool) {
	switch f {
	case floodMCP:
		return s.search(neighbourSchool), true
	case floodLegacy:
		return s.protected(neighbourSchool, s.floodToken), true
	case floodToken:
		return requestSpec{}, false
	}
	return s.discovery(neighbourSchool), true
}

// measure runs one flood's rounds: the victim alone, then the victim
// while the neighbour floods (the flood started cfg.warm before the
// victim's phase, and stopped when it ends), each followed by
// cfg.settle. The victim's clients are a process of their own
// (noisyload.go).
func (s *noisySetup) measure(f string) (string, error) {
	cfg := s.run.cfg
	pid := s.caddy.pid()
	victim := victimLoad{Port: s.port, Clients: cfg.victimC, Duration: cfg.duration, Request: s.victimAsks(), Raw: cfg.raw}
	flood, what := s.floodAsker(f)
	spec, specified := s.floodSpec(f)
	var raw rawRequest
	if specified && cfg.raw {
		var err error
		if raw, err = buildRaw(spec); err != nil {
			return "", err
		}
	}
	var rounds []noisyRound
	var aloneAnswers, floodedAnswers, floodAnswers answerCount
	var ranDry []string
	ctx := context.Background()
	for r := range cfg.rounds {
		var round noisyRound
		var answers answerCount
		var err error
		if round.alone, answers, err = runVictim(ctx, victim); err != nil {
			return "", err
		}
		aloneAnswers.add(answers)
		time.Sleep(cfg.settle)

		work := 0
		if f == floodToken {
			if err := s.prepareCodes(); err != nil {
				return "", err
			}
			work = len(s.codes.items)
			time.Sleep(cfg.settle)
		}
		tf := newTally(cfg.floodC)
		floodCtx, stopFlood := context.WithCancel(ctx)
		var dry bool
		var wg sync.WaitGroup
		req := s.floodRequest(flood, tf)
		var rc *rawClients
		if raw.wire != nil {
			rc = newRawClients(s.port, cfg.floodC)
			req = func(ctx context.Context, w int) error {
				_, err := askRaw(ctx, rc, raw, tf, w)
				return err
			}
		}
		wg.Go(func() {
			round.flood = loadCtx(floodCtx, cfg.floodC, time.Hour, work, pid, req)
			dry = floodCtx.Err() == nil // it ended before it was stopped: the codes ran out
		})
		time.Sleep(cfg.warm)
		var profiled sync.WaitGroup
		if r == 0 && s.run.cfg.profile {
			profiled.Go(func() { s.profileFlooded(f) })
		}
		round.flooded, answers, err = runVictim(ctx, victim)
		stopFlood()
		wg.Wait()
		if rc != nil {
			rc.closeAll()
		}
		profiled.Wait()
		if err != nil {
			return "", err
		}
		floodedAnswers.add(answers)
		floodAnswers.add(tf.sum())
		if f == floodToken {
			s.mostUsed = max(s.mostUsed, min(int(s.codes.next.Load()), len(s.codes.items)))
			if dry {
				ranDry = append(ranDry, fmt.Sprintf("round %d after %.1f s", r+1, round.flood.elapsed.Seconds()))
			}
		}
		rounds = append(rounds, round)
		time.Sleep(cfg.settle)
	}
	if len(ranDry) > 0 {
		s.run.notes = append(s.run.notes, fmt.Sprintf("%s, %s flood: the neighbour ran out of prepared codes (%s): "+
			"its flood ended before the victim's phase did; raise -exchanges.", s.name, f, strings.Join(ranDry, "; ")))
	}
	if e := firstFloodError(rounds); e != nil {
		s.run.notes = append(s.run.notes, fmt.Sprintf("%s, %s flood: a neighbour's request had no answer, or a wrong one: %v", s.name, f, e))
	}
	sum := summarize(rounds)
	return sum.row(s.name, what, aloneAnswers, floodedAnswers, floodAnswers, loadAverage()), nil
}

// prepareCodes tops the neighbour's codes up before a flooded phase of
// the token flood: at least cfg.exchanges, and half again as many as a
// phase has taken so far; the codes a phase left are kept.
func (s *noisySetup) prepareCodes() error {
	left := s.codes.items[min(int(s.codes.next.Load()), len(s.codes.items)):]
	need := max(s.run.cfg.exchanges, s.mostUsed*3/2) - len(left)
	fresh := &pool[pendingCode]{items: left}
	if need > 0 {
		o := &oauthClient{origin: s.issuer(neighbourSchool), http: s.floodClient}
		st := load(s.run.cfg.floodC, 10*time.Minute, need, 0, func(ctx context.Context, _ int) error {
			c, err := o.authorize(ctx)
			if err == nil {
				fresh.put(c)
			}
			return err
		})
		if st.failures > 0 {
			return fmt.Errorf("preparing codes: %d of %d failed, first: %v", st.failures, st.requests, st.firstErr)
		}
	}
	s.codes = fresh
	return nil
}

// profileFlooded saves a CPU profile and an execution trace of the Caddy
// for 2 s of the first flooded phase (-profile noisy), to
// bench-noisy-<setup>-<flood>.pprof and -trace.out: where the victim's
// requests wait (go tool trace -pprof=sched, -pprof=sync).
func (s *noisySetup) profileFlooded(f string) {
	base := "bench-noisy-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s.name+"-"+f)
	st := &stack{adminAddr: s.caddy.admin}
	var trace sync.WaitGroup
	trace.Go(func() { st.saveProfile("trace?seconds=2", base+"-trace.out") })
	st.saveProfile("profile?seconds=2", base+".pprof")
	trace.Wait()
}
