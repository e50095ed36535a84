package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// What -noisy counts and how it states it: the answers of a phase by
// status, and a flood's rounds summed up as ratios within each round.

// answerCount is a phase's answers by status (0: no answer), with the
// refusals (429, 503) that lacked Retry-After and the 200s whose body
// lacked the request's marker.
type answerCount struct {
	status         map[int]int
	refused        int // 429 and 503
	refusedWithout int // of those, without Retry-After
	bad            int // 200s without the marker
}

// tally counts the answers of one load run, a count per worker so that
// the workers share no lock.
type tally struct{ workers []answerCount }

func newTally(workers int) *tally { return &tally{workers: make([]answerCount, workers)} }

// record counts one answer of worker w.
func (t *tally) record(w, status int, retryAfter bool) {
	a := &t.workers[w]
	if a.status == nil {
		a.status = map[int]int{}
	}
	a.status[status]++
	if status == 429 || status == 503 {
		a.refused++
		if !retryAfter {
			a.refusedWithout++
		}
	}
}

// markBad counts a 200 of worker w that lacked its marker (already
// recorded as a 200).
func (t *tally) markBad(w int) { t.workers[w].bad++ }

func (t *tally) sum() answerCount {
	var s answerCount
	for _, a := range t.workers {
		s.add(a)
	}
	return s
}

func (a *answerCount) add(b answerCount) {
	if a.status == nil {
		a.status = map[int]int{}
	}
	for k, v := range b.status {
		a.status[k] += v
	}
	a.refused += b.refused
	a.refusedWithout += b.refusedWithout
	a.bad += b.bad
}

func (a answerCount) total() int {
	n := 0
	for _, v := range a.status {
		n += v
	}
	return n
}

// statusName is how a status reads in the tables.
func statusName(status int) string {
	if status == 0 {
		return "no answer"
	}
	return fmt.Sprint(status)
}

// shares states every status's share, the most frequent first: "200
// 100 % of 31,234", "200 61 %, 503 39 % of 9,876".
func (a answerCount) shares() string {
	total := a.total()
	if total == 0 {
		return "none"
	}
	var parts []string
	for _, k := range a.byFrequency() {
		parts = append(parts, fmt.Sprintf("%s %s", statusName(k), percent(a.status[k], total)))
	}
	s := strings.Join(parts, ", ") + " of " + thousands(total)
	if a.bad > 0 {
		s += fmt.Sprintf(" (%d of the 200s wrong)", a.bad)
	}
	return s
}

// others states the answers other than 200 by count, "none" if none.
func (a answerCount) others() string {
	var parts []string
	for _, k := range a.byFrequency() {
		if k != 200 {
			parts = append(parts, fmt.Sprintf("%s × %d", statusName(k), a.status[k]))
		}
	}
	if a.bad > 0 {
		parts = append(parts, fmt.Sprintf("a wrong 200 × %d", a.bad))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// byFrequency is the statuses seen, the most frequent first.
func (a answerCount) byFrequency() []int {
	keys := slices.Sorted(maps.Keys(a.status))
	slices.SortStableFunc(keys, func(x, y int) int { return a.status[y] - a.status[x] })
	return keys
}

// retryAfter says whether every refusal (429, 503) said when to retry.
func (a answerCount) retryAfter() string {
	switch {
	case a.refused == 0:
		return "— (none refused)"
	case a.refusedWithout == 0:
		return fmt.Sprintf("yes (%s)", thousands(a.refused))
	}
	return fmt.Sprintf("**no**: %s of %s without", thousands(a.refusedWithout), thousands(a.refused))
}

func percent(n, total int) string {
	p := 100 * float64(n) / float64(total)
	if p > 0 && p < 1 {
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.0f %%", p)
}

// thousands writes n with thousands separated by commas.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// noisyRound is one round of a flood: the victim alone, the victim
// flooded, and the neighbour's flood beside it.
type noisyRound struct{ alone, flooded, flood stats }

// noisySummary is a flood's rounds summed up. The ratios are the median
// of the rounds' own ratios (flooded ÷ alone within each round, so that
// the machine's drift between rounds cancels), with their range.
type noisySummary struct {
	aloneRPS, floodedRPS, floodRPS float64 // medians of the rounds'
	rps, p99                       spread
	aloneP50, floodedP50           time.Duration
	aloneP99, floodedP99           time.Duration
	victimLongest, floodLongest    time.Duration
	victimFailures                 int
}

// spread is a median and the range it was taken from.
type spread struct{ median, lo, hi float64 }

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return spread{median: s[len(s)/2], lo: s[0], hi: s[len(s)-1]}
}

func summarize(rounds []noisyRound) noisySummary {
	var sum noisySummary
	if len(rounds) == 0 {
		return sum
	}
	var rps, p99s []float64
	var alone, flooded, flood []stats
	for _, r := range rounds {
		alone, flooded, flood = append(alone, r.alone), append(flooded, r.flooded), append(flood, r.flood)
		if r.alone.requests > 0 && r.flooded.requests > 0 {
			rps = append(rps, r.flooded.rps()/r.alone.rps())
			if a := r.alone.percentile(0.99); a > 0 {
				p99s = append(p99s, float64(r.flooded.percentile(0.99))/float64(a))
			}
		}
		sum.victimFailures += r.alone.failures + r.flooded.failures
		sum.victimLongest = max(sum.victimLongest, longest(r.alone), longest(r.flooded))
		sum.floodLongest = max(sum.floodLongest, longest(r.flood))
	}
	sum.rps, sum.p99 = spreadOf(rps), spreadOf(p99s)
	sum.aloneRPS, sum.floodedRPS, sum.floodRPS = median(alone, stats.rps), median(flooded, stats.rps), median(flood, stats.rps)
	pct := func(p float64) func(stats) float64 { return func(s stats) float64 { return float64(s.percentile(p)) } }
	sum.aloneP50, sum.floodedP50 = time.Duration(median(alone, pct(0.5))), time.Duration(median(flooded, pct(0.5)))
	sum.aloneP99, sum.floodedP99 = time.Duration(median(alone, pct(0.99))), time.Duration(median(flooded, pct(0.99)))
	return sum
}

// longest is a run's longest answered request (its latencies are sorted).
func longest(s stats) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	return s.latencies[len(s.latencies)-1]
}

// The targets: the victim flooded keeps 0.6 of its throughput
// alone, and its p99 grows at most threefold; and none of its requests
// fails.
const (
	targetThroughput = 0.6
	targetP99        = 3.0
)

// met judges the targets.
func (s noisySummary) met() string {
	var misses []string
	if s.rps.median < targetThroughput {
		misses = append(misses, "throughput")
	}
	if s.p99.median > targetP99 {
		misses = append(misses, "p99")
	}
	if s.victimFailures > 0 {
		misses = append(misses, "victim failures")
	}
	if len(misses) == 0 {
		return "met"
	}
	return "**not met**: " + strings.Join(misses, ", ")
}

// row is the flood's line of the table.
func (s noisySummary) row(setup, flood string, alone, flooded, neighbour answerCount, load string) string {
	victimOthers := "none"
	if a, f := alone.others(), flooded.others(); a != "none" || f != "none" {
		victimOthers = fmt.Sprintf("alone: %s; flooded: %s", a, f)
	}
	return fmt.Sprintf("| %s | %s | %.0f → %.0f | %.2f× (%.2f–%.2f) | %s → %s | %.1f× (%.1f–%.1f) | %s → %s | %s | %s | %.0f | %s | %s / %s | %s | %s |",
		setup, flood, s.aloneRPS, s.floodedRPS, s.rps.median, s.rps.lo, s.rps.hi,
		ms(float64(s.aloneP99)), ms(float64(s.floodedP99)), s.p99.median, s.p99.lo, s.p99.hi,
		ms(float64(s.aloneP50)), ms(float64(s.floodedP50)), victimOthers, neighbour.shares(), s.floodRPS,
		neighbour.retryAfter(), seconds(s.victimLongest), seconds(s.floodLongest), load, s.met())
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// firstFloodError is the first error of the neighbour's runs, nil if
// none.
func firstFloodError(rounds []noisyRound) error {
	for _, r := range rounds {
		if r.flood.firstErr != nil {
			return r.flood.firstErr
		}
	}
	return nil
}
