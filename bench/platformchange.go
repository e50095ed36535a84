package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// How registry changes reach the running platform, without a reload.

// changesApplied writes a new school to the registry and polls its
// discovery every 10 ms until it is served with its issuer, then removes
// it and polls until it answers 404, cfg.samples times. The times run
// from the write's return (Put and Remove return once the change is
// durable: the file synced and renamed, or the transaction committed).
// With one instance (dir), the writer is the bench's own Dir on the
// directory, another process as a deploy tool would be; with two
// (postgres), it is the bench's own connection to the database, a third
// instance as far as A and B can tell: the school must be served at B and
// its removal answered 404 at both.
func (p *platformRun) changesApplied(kind string, reg registry.Registry, instances []*platformCaddy) error {
	ctx := context.Background()
	at := instances[len(instances)-1]
	var added, removed, puts, removes []time.Duration
	for k := range p.cfg.samples {
		name := fmt.Sprintf("new%d", k)
		t0 := time.Now()
		if _, err := reg.Put(ctx, p.record(name, nil, "")); err != nil {
			return fmt.Errorf("adding %s: %v", name, err)
		}
		puts = append(puts, time.Since(t0))
		t0 = time.Now()
		if err := at.waitFor(p.host(name), t0, 30*time.Second, func(status int, issuer string) bool {
			return status == http.StatusOK && issuer == p.issuer(name)
		}); err != nil {
			return err
		}
		added = append(added, time.Since(t0))
		t0 = time.Now()
		if err := reg.Remove(ctx, p.issuer(name)); err != nil {
			return fmt.Errorf("removing %s: %v", name, err)
		}
		removes = append(removes, time.Since(t0))
		t0 = time.Now()
		errs := make([]error, len(instances))
		took := make([]time.Duration, len(instances))
		var wg sync.WaitGroup
		for i, c := range instances {
			wg.Go(func() {
				errs[i] = c.waitFor(p.host(name), t0, 30*time.Second, func(status int, _ string) bool {
					return status == http.StatusNotFound
				})
				took[i] = time.Since(t0)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		removed = append(removed, slices.Max(took))
		time.Sleep(100 * time.Millisecond)
	}
	who := "1 (written by the bench's own registry.Dir, another process)"
	if len(instances) > 1 {
		who = "2 (written by the bench's own connection; added: served at B; removed: 404 at A and B)"
	}
	a50, amax := percentiles(added)
	r50, rmax := percentiles(removed)
	put50, _ := percentiles(puts)
	remove50, _ := percentiles(removes)
	p.changes = append(p.changes, fmt.Sprintf("| %s | %s | %d | %s | %s | %s | %s | ≤ 1 s: %s | %s, %s |", kind, who, len(added),
		ms(float64(a50)), ms(float64(amax)), ms(float64(r50)), ms(float64(rmax)), met(max(amax, rmax) <= time.Second),
		ms(float64(put50)), ms(float64(remove50))))
	return nil
}

// churnSchool is a school the writer adds during the churn, and may
// remove.
type churnSchool struct {
	name    string
	visible time.Time   // when clients start asking for it
	removed atomic.Bool // set before its Remove is sent
}

// churnTally counts the answers under churn.
type churnTally struct {
	mu                                                sync.Mutex
	requests, fivexx, wrong, lost, other, expected404 int
	firstBad                                          string
	adds, changes, removes                            int
}

func (t *churnTally) bad(what string, counter *int) {
	*counter++
	if t.firstBad == "" {
		t.firstBad = what
	}
}

// underChurn runs 16 clients against every instance (discovery and
// protected requests to a hundred long-lived schools, discovery to the
// schools the writer adds) for cfg.churn, while a writer, every 100 ms in
// turn, adds a school, changes a long-lived school (an alias host added
// or taken away, and its login_url), and removes a school it added. It
// counts 5xx, discovery answered with another issuer than the host asked
// for, 404 of a school never removed (a school added is asked for only
// cfg.visible after its write: 2 s, twice the target delay), and any other
// failure.
func (p *platformRun) underChurn(kind string, reg registry.Registry, instances []*platformCaddy) error {
	stable := make([]string, min(p.cfg.schools, 100))
	tokens := make([]string, len(stable))
	for i := range stable {
		stable[i] = schoolName(i)
	}
	ctx := context.Background()
	if err := forEach(ctx, len(stable), 16, func(ctx context.Context, i int) error {
		var err error
		tokens[i], err = instances[0].token(ctx, p, stable[i])
		return err
	}); err != nil {
		return instances[0].failure(err)
	}
	progress(kind, "tokens of %d schools taken, churning", len(stable))
	var mu sync.Mutex // guards added
	var added []*churnSchool
	tally := &churnTally{}
	run, cancel := context.WithTimeout(ctx, p.cfg.churn)
	defer cancel()
	var clients sync.WaitGroup
	for w := range 16 {
		clients.Go(func() {
			for k := w; run.Err() == nil; k += 16 {
				c := instances[k%len(instances)]
				if k%4 == 3 {
					mu.Lock()
					var pick *churnSchool
					visible := 0
					for _, s := range added {
						if time.Now().After(s.visible) {
							visible++
						}
					}
					if visible > 0 {
						n := rand.IntN(visible)
						for _, s := range added {
							if time.Now().After(s.visible) {
								if n == 0 {
									pick = s
									break
								}
								n--
							}
						}
					}
					mu.Unlock()
					if pick != nil {
						p.askChurned(run, c, pick, tally)
						continue
					}
				}
				i := rand.IntN(len(stable))
				p.askStable(run, c, stable[i], tokens[i], k%2 == 0, tally)
			}
		})
	}
	writeErr := p.writeChurn(run, reg, stable, &mu, &added, tally)
	cancel()
	clients.Wait()
	if writeErr != nil {
		return writeErr
	}
	line := fmt.Sprintf("| %s | %d | 16 | %.0f | %d / %d / %d | %d | %d | %d | %d | %d | %d |", kind, len(instances), p.cfg.churn.Seconds(),
		tally.adds, tally.changes, tally.removes, tally.requests, tally.fivexx, tally.wrong, tally.lost, tally.other, tally.expected404)
	if tally.firstBad != "" {
		line += " first failure: " + tally.firstBad
	}
	p.churn = append(p.churn, line)
	return nil
}

// askStable sends a discovery or a protected request to a long-lived
// school and counts the answer.
func (p *platformRun) askStable(ctx context.Context, c *platformCaddy, name, token string, discovery bool, t *churnTally) {
	var status int
	var issuer string
	var err error
	what := "discovery"
	if discovery {
		status, issuer, err = c.discovery(ctx, p.host(name))
	} else {
		what = "protected"
		status, err = c.protected(ctx, p.host(name), token)
	}
	if ctx.Err() != nil {
		return // cut off by the end of the run
	}
	desc := fmt.Sprintf("%s %s at %s: HTTP %d issuer %q error %v", what, p.host(name), c.name, status, issuer, err)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	switch {
	case err != nil:
		t.bad(desc, &t.other)
	case status >= 500:
		t.bad(desc, &t.fivexx)
	case status == http.StatusNotFound:
		t.bad(desc, &t.lost)
	case status != http.StatusOK:
		t.bad(desc, &t.other)
	case discovery && issuer != p.issuer(name):
		t.bad(desc, &t.wrong)
	}
}

// askChurned sends a discovery request to a school the writer added, and
// counts the answer: 404 is expected once its removal was sent.
func (p *platformRun) askChurned(ctx context.Context, c *platformCaddy, s *churnSchool, t *churnTally) {
	status, issuer, err := c.discovery(ctx, p.host(s.name))
	if ctx.Err() != nil {
		return
	}
	gone := s.removed.Load()
	desc := fmt.Sprintf("discovery %s at %s: HTTP %d issuer %q error %v", p.host(s.name), c.name, status, issuer, err)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	switch {
	case err != nil:
		t.bad(desc, &t.other)
	case status >= 500:
		t.bad(desc, &t.fivexx)
	case status == http.StatusNotFound && gone:
		t.expected404++
	case status == http.StatusNotFound:
		t.bad(desc, &t.lost)
	case status != http.StatusOK:
		t.bad(desc, &t.other)
	case issuer != p.issuer(s.name):
		t.bad(desc, &t.wrong)
	}
}

// writeChurn is the writer: until ctx ends, every 100 ms, in turn, a
// school added, a long-lived school changed, and the oldest added school
// that clients ask for removed. A write that fails ends the run.
func (p *platformRun) writeChurn(ctx context.Context, reg registry.Registry, stable []string, mu *sync.Mutex, added *[]*churnSchool, t *churnTally) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	aliased := map[string]bool{}
	for step := 0; ; step++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// The writes get their own context: one cut off by the end of the
		// run would be a failure of the bench, not of the registry.
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		switch step % 3 {
		case 0:
			name := fmt.Sprintf("c%d", step)
			if _, err = reg.Put(wctx, p.record(name, nil, "")); err == nil {
				mu.Lock()
				*added = append(*added, &churnSchool{name: name, visible: time.Now().Add(p.cfg.visible)})
				mu.Unlock()
				t.count(&t.adds)
			}
		case 1:
			name := stable[(step/3)%len(stable)]
			var hosts []string
			if !aliased[name] {
				hosts = []string{p.host("alias-" + name)}
			}
			if _, err = reg.Put(wctx, p.record(name, hosts, fmt.Sprintf("/login?v=%d", step))); err == nil {
				aliased[name] = !aliased[name]
				t.count(&t.changes)
			}
		case 2:
			mu.Lock()
			var victim *churnSchool
			for _, s := range *added {
				if !s.removed.Load() && time.Now().After(s.visible) {
					victim = s
					break
				}
			}
			if victim != nil {
				victim.removed.Store(true)
			}
			mu.Unlock()
			if victim != nil {
				if err = reg.Remove(wctx, p.issuer(victim.name)); err == nil {
					t.count(&t.removes)
				}
			}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("the writer under churn: %v", err)
		}
	}
}

func (t *churnTally) count(counter *int) {
	t.mu.Lock()
	*counter++
	t.mu.Unlock()
}
