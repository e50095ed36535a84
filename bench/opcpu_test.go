package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeServer is a server process whose CPU time the test sets.
func fakeServer(name string, t *time.Duration) serverProc {
	return serverProc{name: name, cpu: func() time.Duration { return *t }}
}

// The CPU a run cost each server is the difference of the samples around
// it, charged per answered operation; a counter that went backwards (a
// process restarted) counts nothing rather than a negative.
func TestOnServers(t *testing.T) {
	var caddy, pg time.Duration = 10 * time.Second, 3 * time.Second
	servers := []serverProc{fakeServer("Caddy", &caddy), fakeServer("PostgreSQL", &pg)}
	s, err := onServers(servers, func() (stats, error) {
		caddy += 200 * time.Millisecond // 1,000 operations: 200 µs each
		pg += 100 * time.Millisecond    // 100 µs each
		return stats{requests: 1000}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.serverCPUPerOp(), float64(300*time.Microsecond); got != want {
		t.Errorf("CPU per operation %v, want %v", time.Duration(got), time.Duration(want))
	}
	if got := time.Duration(s.processCPUPerOp(1)); got != 100*time.Microsecond {
		t.Errorf("PostgreSQL's CPU per operation %v", got)
	}
	if got := s.processCPUPerOp(2); got != 0 {
		t.Errorf("a server not sampled: %v", got)
	}

	// An error is returned with what was sampled.
	_, err = onServers(servers, func() (stats, error) { return stats{}, errors.New("boom") })
	if err == nil {
		t.Error("the run's error was lost")
	}

	backwards := serverUses(servers, []time.Duration{5 * time.Second, 0}, []time.Duration{time.Second, time.Second})
	if backwards[0].cpu != 0 || backwards[1].cpu != time.Second {
		t.Errorf("uses %+v", backwards)
	}
	if (stats{servers: backwards}).serverCPUPerOp() != 0 {
		t.Error("no operation answered: no CPU per operation")
	}
}

// Medians are taken over the runs, per process and for the sum (which
// need not be the sum of the medians), and ratios read on both.
func TestOpCPUAndRatios(t *testing.T) {
	run := func(rps int, caddy, pg time.Duration) stats {
		return stats{requests: rps, elapsed: time.Second,
			servers: []serverUse{{"Caddy", caddy * time.Duration(rps)}, {"PostgreSQL", pg * time.Duration(rps)}}}
	}
	µs := time.Microsecond
	gateway := []stats{run(2000, 200*µs, 100*µs), run(1800, 220*µs, 90*µs), run(2200, 180*µs, 130*µs)}
	peer := []stats{run(500, 900*µs, 300*µs), run(400, 1000*µs, 200*µs), run(600, 1100*µs, 400*µs)}

	total, each := opCPU(gateway)
	if time.Duration(total) != 310*µs {
		t.Errorf("total %v, want the median of 300, 310, 310 µs", time.Duration(total))
	}
	if each != "Caddy 200 µs + PostgreSQL 100 µs" {
		t.Errorf("each %q", each)
	}
	if got := ratio(gateway, peer, stats.rps); got != "4.00×" {
		t.Errorf("rate ratio %s", got)
	}
	if got := ratio(gateway, peer, stats.serverCPUPerOp); got != "0.26×" {
		t.Errorf("CPU ratio %s (310 ÷ 1200 µs)", got)
	}
	if got := ratio(gateway, []stats{{requests: 10, elapsed: time.Second}}, stats.serverCPUPerOp); got != "—" {
		t.Errorf("a baseline without CPU: %s", got)
	}
	if got := ratio(gateway, nil, stats.rps); got != "—" {
		t.Errorf("no baseline: %s", got)
	}
	if total, each := opCPU(nil); total != 0 || each != "" {
		t.Errorf("no runs: %v %q", total, each)
	}

	b := &bench{}
	b.peerRow("sc", "peer", peer, nil)
	b.peerRow("sc", "gateway", gateway, peer)
	b.targetNote("what", gateway, peer, "≥ 2×", "≤ 0.5×")
	table := b.peerTable.String()
	if strings.Count(table, "| scenario |") != 1 || !strings.Contains(table, "| sc | gateway | 2000 |") ||
		!strings.Contains(table, "| 310 µs | Caddy 200 µs + PostgreSQL 100 µs | 4.00× | 0.26× |") ||
		!strings.Contains(table, "| baseline | baseline |") {
		t.Errorf("table:\n%s", table)
	}
	if note := b.notes.String(); !strings.Contains(note, "what: gateway ÷ peer, ops/s 4.00× (target ≥ 2×), CPU/op 0.26× (target ≤ 0.5×)") {
		t.Errorf("note: %s", note)
	}
}
