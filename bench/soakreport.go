package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The soak's results: the plot (soak.svg) and the summary (soak.md) in
// the output directory, the summary printed too. Its verdicts are the
// soak's targets, read on the samples after the warm-up.

// report writes the plot and the summary and prints the summary; the
// error says which target failed, so the run's exit status tells.
func (s *soakRun) report(tally *soakTally, check soakCheck, fair map[string]int) error {
	names := make([]string, 0, len(s.instances))
	for _, c := range s.instances {
		names = append(names, c.name)
	}
	plot := filepath.Join(s.cfg.out, "soak.svg")
	f, err := os.Create(plot)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("soak: %d schools on PostgreSQL, two instances, %s (warm-up shaded)", s.cfg.schools, s.cfg.duration)
	if err := writePlot(f, title, s.cfg.duration, s.cfg.warmup, soakPanels(s.samples, names)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var b strings.Builder
	failed := s.summary(&b, names, tally, check, fair)
	summary := filepath.Join(s.cfg.out, "soak.md")
	if err := os.WriteFile(summary, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	fmt.Printf("\nplot: %s\nsummary: %s\n", plot, summary)
	if len(failed) > 0 {
		return fmt.Errorf("soak: not met: %s", strings.Join(failed, "; "))
	}
	return nil
}

// summary writes the markdown and returns the targets not met.
func (s *soakRun) summary(b *strings.Builder, names []string, tally *soakTally, check soakCheck, fair map[string]int) (failed []string) {
	cfg := s.cfg
	if cfg.smoke {
		fmt.Fprintln(b, "(a short soak: the harness checked, the figures meaningless)")
		fmt.Fprintln(b)
	}
	fmt.Fprintf(b, "machine: %s; Caddy built from %s; load average before %s, after %s\n\n", machine(), s.commit, s.loadBefore, s.loadAfter)
	fmt.Fprintf(b, "%d schools in a PostgreSQL registry (stores in the same database), max_active %d, two instances; %s of traffic, "+
		"a sample every %s, the first %s a warm-up; %d token schools, one school flooded by %d closed-loop clients at instance a.\n\n",
		cfg.schools, cfg.maxActive, cfg.duration, cfg.every, cfg.warmup, cfg.tokenSchools, cfg.flooders)

	fmt.Fprintln(b, "| instance | series | after warm-up: first | min | max | last | band around the first | slope per hour | target |")
	fmt.Fprintln(b, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, name := range names {
		after := afterWarmup(s.samples[name], cfg.warmup)
		if len(after) < 2 {
			failed = append(failed, fmt.Sprintf("instance %s: fewer than two samples after the warm-up", name))
			continue
		}
		window := after[len(after)-1].At - after[0].At
		at := make([]time.Duration, len(after))
		for i, smp := range after {
			at[i] = smp.At
		}
		for _, series := range soakSeries {
			ys := make([]float64, len(after))
			lo, hi := ys[0], ys[0]
			for i, smp := range after {
				ys[i] = series.value(smp)
				if i == 0 || ys[i] < lo {
					lo = ys[i]
				}
				if i == 0 || ys[i] > hi {
					hi = ys[i]
				}
			}
			slope := slopePerHour(at, ys)
			bandLo, bandHi, inBand := band(ys, 0.10)
			target := ""
			switch series.name {
			case "RSS":
				target = "±10 %: " + met(inBand)
				if !inBand && !cfg.smoke {
					failed = append(failed, fmt.Sprintf("instance %s: RSS strayed %+.0f %% / %+.0f %%", name, bandLo*100, bandHi*100))
				}
			case "goroutines", "open files":
				ok := flat(ys, slope, window)
				target = "flat: " + met(ok)
				if !ok && !cfg.smoke {
					failed = append(failed, fmt.Sprintf("instance %s: %s rose %.1f an hour", name, series.name, slope))
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %+.1f %% / %+.1f %% | %+.1f | %s |\n", name, series.name,
				axisLabel(ys[0]), axisLabel(lo), axisLabel(hi), axisLabel(ys[len(ys)-1]), bandLo*100, bandHi*100, slope, target)
		}
	}
	fmt.Fprintln(b, "\n(flat: what the least-squares slope adds over the window after the warm-up is at most twice the readings' standard deviation, 5 % of their mean or 2, whichever is most; the band is the lowest and highest reading against the first after the warm-up. A short soak does not fail on these.)")

	byStatus, all, fivexx, unavailable := tally.totals()
	fairAll := 0
	for _, name := range names {
		fairAll += max(fair[name], 0)
	}
	fmt.Fprintf(b, "\n%d answers by status: %s; the instances counted %d fair-share refusals (%s).\n\n", all, statusList(byStatus), fairAll, fairList(names, fair))
	fmt.Fprintln(b, "| requests | answers by status (0: no answer) |")
	fmt.Fprintln(b, "| --- | --- |")
	kinds := make([]string, 0, len(tally.status))
	for k := range tally.status {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(b, "| %s | %s |\n", k, statusList(tally.status[k]))
	}
	other5xx := fivexx - unavailable
	fairOK := other5xx == 0 && unavailable <= fairAll
	fmt.Fprintf(b, "\n- no 5xx besides fair-share 503s: %d 503 (≤ the %d fair-share refusals counted), %d other 5xx: %s\n", unavailable, fairAll, other5xx, met(fairOK))
	if !fairOK {
		failed = append(failed, fmt.Sprintf("%d 503 against %d fair-share refusals, %d other 5xx %v", unavailable, fairAll, other5xx, tally.first5))
	}
	fmt.Fprintf(b, "- no request answered by the wrong school (discovery's issuer, the ID token's iss, another school's token refused): %d: %s%s\n",
		tally.wrong, met(tally.wrong == 0), firstOf(tally.firstWrong))
	if tally.wrong > 0 {
		failed = append(failed, fmt.Sprintf("%d answered by the wrong school", tally.wrong))
	}
	fmt.Fprintf(b, "- a registered school answered 404: %d%s; a removed school 404 (expected): %d\n", tally.lost, firstOf(tally.firstLost), tally.expected404)
	fmt.Fprintf(b, "- other failures (no answer, a 4xx not expected, a 200 without its content): %d%s\n", tally.failed, firstOf(tally.firstFailed))
	if tally.lost > 0 || tally.failed > 0 {
		failed = append(failed, fmt.Sprintf("%d lost, %d other failures", tally.lost, tally.failed))
	}
	fmt.Fprintf(b, "- registry writes: %d added, %d changed, %d removed\n", tally.adds, tally.changes, tally.removes)
	reasons := make([]string, 0, len(check.refused))
	for r, n := range check.refused {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	tokensOK := check.nUnexpect == 0 && check.sampled > 0
	fmt.Fprintf(b, "- tokens at the end: %d grants issued, %d sampled: %d still valid (access token used, refresh rotated, new access token used), refused for the stated reason: %s; otherwise: %d: %s%s\n",
		check.issued, check.sampled, check.valid, orNone(strings.Join(reasons, ", ")), check.nUnexpect, met(tokensOK), firstOf(check.unexpected))
	if !tokensOK {
		failed = append(failed, fmt.Sprintf("%d tokens neither valid nor refused for their reason", check.nUnexpect))
	}
	loads := make([]string, 0, len(s.samples["a"]))
	for _, smp := range s.samples["a"] {
		loads = append(loads, smp.Load)
	}
	fmt.Fprintf(b, "- load average at each sample: %s\n", strings.Join(loads, "; "))
	return failed
}

func statusList(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d × %d", m[c], c))
	}
	return strings.Join(parts, ", ")
}

func fairList(names []string, fair map[string]int) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s: %d", n, fair[n]))
	}
	return strings.Join(parts, ", ")
}

func firstOf(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return "; first: " + strings.Join(list, " | ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
