package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/registry"
)

// The budget check of -noisy: a school whose record says budget {
// requests R/s }, served by two instances on one PostgreSQL registry,
// asked far more often than R through both; what the two admit together
// (answered 200) is counted second by second.

// budgetCheck adds the budgeted school to the registry that instance a
// serves, starts a second instance b on it, and loads both.
func (n *noisyRun) budgetCheck(base string, reg *benchRegistry, a *platformCaddy, port int) error {
	rate := n.cfg.budgetRate
	school := noisySchool{name: budgetSchool, upstream: n.upstream, budgetRate: rate}
	issuer := schoolIssuer(budgetSchool, port)
	if _, err := reg.Put(context.Background(), registry.Record{Issuer: issuer, Config: n.schoolConfig(school)}); err != nil {
		return fmt.Errorf("the budgeted school's record: %v", err)
	}
	portB, err := freePort()
	if err != nil {
		return err
	}
	b, err := n.startPlatform(base, "b", portB, reg.line)
	if err != nil {
		return err
	}
	defer b.stop()
	setup := fmt.Sprintf("platform, registry postgres: one school with `budget { requests %d/s }`", rate)
	// Every school's host names instance a's port; either instance serves
	// it (the clients dial their instance whatever the host).
	host := schoolHost(budgetSchool, port)
	served := func(status int, got string) bool { return status == http.StatusOK && got == issuer }
	for _, c := range []*platformCaddy{a, b} {
		// A build that refuses the record says so in its log at once.
		err := c.waitFor(host, time.Now(), 3*time.Second, served)
		if err != nil && logMentioning(c.log, "budget") == "" {
			err = c.waitFor(host, time.Now(), 20*time.Second, served)
		}
		if err == nil {
			continue
		}
		if line := logMentioning(c.log, "budget"); line != "" {
			n.budget = append(n.budget, fmt.Sprintf("| %s | SKIPPED: this build does not take the option (instance %s's log: %.300s) | | | | | | | | |",
				setup, c.name, line))
			fmt.Fprintf(os.Stderr, "noisy: budget check SKIPPED: the build does not take budget in a record: %.300s\n", line)
			return nil
		}
		return err
	}
	ca, cb := clientFor(port, n.cfg.budgetClientsPerInstance), clientFor(portB, n.cfg.budgetClientsPerInstance)
	defer ca.CloseIdleConnections()
	defer cb.CloseIdleConnections()
	tok, err := memberToken(context.Background(), &oauthClient{origin: issuer, http: ca})
	if err != nil {
		return a.failure(fmt.Errorf("a member token of the budgeted school: %v", err))
	}
	s := &noisySetup{port: port}
	protected := s.protected(budgetSchool, tok.Access).asker()

	k, warm, window := n.cfg.budgetClientsPerInstance, n.cfg.budgetWarm, n.cfg.budgetWindow
	start := time.Now()
	var wg sync.WaitGroup
	runs := make([]stats, 2)
	tallies := []*tally{newTally(k), newTally(k)}
	admitted := make([][][]time.Duration, 2) // by instance, by worker: when each 200 came
	for i, inst := range []struct {
		c      *platformCaddy
		client *http.Client
	}{{a, ca}, {b, cb}} {
		admitted[i] = make([][]time.Duration, k)
		wg.Go(func() {
			runs[i] = load(k, warm+window, 0, inst.c.pid(), func(ctx context.Context, w int) error {
				status, err := ask(ctx, inst.client, protected, tallies[i], w)
				if err == nil && status == http.StatusOK {
					admitted[i][w] = append(admitted[i][w], time.Since(start))
				}
				return err
			})
		})
	}
	wg.Wait()
	var at []time.Duration
	for _, byWorker := range admitted {
		for _, times := range byWorker {
			at = append(at, times...)
		}
	}
	answers := tallies[0].sum()
	answers.add(tallies[1].sum())
	offered := float64(runs[0].requests)/runs[0].elapsed.Seconds() + float64(runs[1].requests)/runs[1].elapsed.Seconds()
	counts := perSecond(at, warm, window)
	n.budget = append(n.budget, budgetRow(setup, k, window, counts, rate, answers, offered))
	if note := budgetReading(counts, rate); note != "" {
		n.notes = append(n.notes, "budget check: "+note)
	}
	for _, r := range runs {
		if r.firstErr != nil {
			n.notes = append(n.notes, fmt.Sprintf("budget check: a request had no answer, or a wrong one: %v", r.firstErr))
			break
		}
	}
	return nil
}

// perSecond counts the times that fall in each whole second of the
// window that begins at warm.
func perSecond(at []time.Duration, warm, window time.Duration) []int {
	secs := int(window / time.Second)
	counts := make([]int, secs)
	for _, t := range at {
		if t < warm {
			continue
		}
		if i := int((t - warm) / time.Second); i < secs {
			counts[i]++
		}
	}
	return counts
}

// budgetMet says whether every second admitted the rate within ±10 %.
func budgetMet(counts []int, rate int) bool {
	if len(counts) == 0 {
		return false
	}
	lo, hi := float64(rate)*0.9, float64(rate)*1.1
	for _, c := range counts {
		if float64(c) < lo || float64(c) > hi {
			return false
		}
	}
	return true
}

// budgetRow is the check's line of the table.
func budgetRow(setup string, clientsPerInstance int, window time.Duration, counts []int, rate int, answers answerCount, offered float64) string {
	if len(counts) == 0 {
		return fmt.Sprintf("| %s | 2 | 2 × %d | 0 | — | — | no whole second measured | %s | %s | %.0f |",
			setup, clientsPerInstance, answers.shares(), answers.retryAfter(), offered)
	}
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	total := 0
	for _, c := range counts {
		total += c
	}
	return fmt.Sprintf("| %s | 2 | 2 × %d | %d | %d / %d / %d | %.0f | %d–%d every second: %s | %s | %s | %.0f |",
		setup, clientsPerInstance, len(counts), sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1],
		float64(total)/float64(len(counts)), rate*9/10, rate*11/10, met(budgetMet(counts, rate)),
		answers.shares(), answers.retryAfter(), offered)
}

// budgetReading says what a missed budget looks like, "" when it is met:
// near twice the rate is each instance admitting the rate alone.
func budgetReading(counts []int, rate int) string {
	if len(counts) == 0 || budgetMet(counts, rate) {
		return ""
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	mean := float64(total) / float64(len(counts))
	switch x := mean / float64(rate); {
	case x >= 1.7 && x <= 2.3:
		return fmt.Sprintf("%.0f admitted a second in all, %.1f× the budget: as if each instance kept it alone", mean, x)
	case x > 2.3:
		return fmt.Sprintf("%.0f admitted a second in all, %.0f× the budget: this build did not hold the school to it", mean, x)
	}
	return fmt.Sprintf("%.0f admitted a second in all on average, but some second fell outside %d–%d", mean, rate*9/10, rate*11/10)
}

// logMentioning is the last line of the log file that mentions word, ""
// if none does.
func logMentioning(path, word string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(raw), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], word) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
