package main

import (
	"fmt"
	"strings"
	"time"
)

// CPU per operation (-peers): on a 2-core machine shared with the load
// generator a throughput ratio moves by a quarter from run to run, while
// the CPU each server process spends on one operation, read from /proc
// before and after a run, moves much less, and is what an operator pays
// for. Every peer row states it beside its throughput: the sum over the
// processes that serve the operation (Caddy and oauth2-proxy for
// forward_auth; Caddy and PostgreSQL with its backends for the gateway's
// postgres store; Hydra and PostgreSQL), and each process's share.

// serverProc is a process an operation spends CPU in.
type serverProc struct {
	name string
	cpu  func() time.Duration // its CPU time so far
}

// processServer is the process pid() names, alone.
func processServer(name string, pid func() int) serverProc {
	return serverProc{name: name, cpu: func() time.Duration { return processCPU(pid()) }}
}

// postgresServer is the PostgreSQL server with its backends and workers,
// live and exited (cpu.go), 0 when its main process is unknown.
func postgresServer(postmaster int) serverProc {
	return serverProc{name: "PostgreSQL", cpu: func() time.Duration {
		if postmaster == 0 {
			return 0
		}
		return treeCPU(postmaster, true)
	}}
}

// serverUse is the CPU one server process used during a run.
type serverUse struct {
	name string
	cpu  time.Duration
}

// sampleServers reads each server's CPU time so far.
func sampleServers(servers []serverProc) []time.Duration {
	t := make([]time.Duration, len(servers))
	for i, s := range servers {
		t[i] = s.cpu()
	}
	return t
}

// serverUses is what each server used between two samples.
func serverUses(servers []serverProc, before, after []time.Duration) []serverUse {
	u := make([]serverUse, len(servers))
	for i, s := range servers {
		u[i] = serverUse{s.name, max(0, after[i]-before[i])}
	}
	return u
}

// onServers runs fn and records in its stats the CPU each server used
// during it. The samples are taken outside the run's timing.
func onServers(servers []serverProc, fn func() (stats, error)) (stats, error) {
	before := sampleServers(servers)
	s, err := fn()
	s.servers = serverUses(servers, before, sampleServers(servers))
	return s, err
}

// serverCPUPerOp is the CPU of every server process together per answered
// operation, 0 when none was answered or no server was sampled.
func (s stats) serverCPUPerOp() float64 {
	if s.requests == 0 {
		return 0
	}
	var sum time.Duration
	for _, u := range s.servers {
		sum += u.cpu
	}
	return float64(sum) / float64(s.requests)
}

// processCPUPerOp is one server process's CPU per answered operation.
func (s stats) processCPUPerOp(i int) float64 {
	if s.requests == 0 || i >= len(s.servers) {
		return 0
	}
	return float64(s.servers[i].cpu) / float64(s.requests)
}

// opCPU is the median over runs of the servers' CPU per operation, all
// together and each (named as in the first run).
func opCPU(runs []stats) (total float64, each string) {
	if len(runs) == 0 {
		return 0, ""
	}
	total = median(runs, stats.serverCPUPerOp)
	var parts []string
	for i, u := range runs[0].servers {
		parts = append(parts, u.name+" "+us(median(runs, func(s stats) float64 { return s.processCPUPerOp(i) })))
	}
	return total, strings.Join(parts, " + ")
}

// peerRow is one row of the peers' table: throughput, latency, CPU per
// operation, and both against the scenario's baseline (ratio of this
// row's median to the baseline's: above 1 a higher rate, or more CPU).
func (b *bench) peerRow(scenario, name string, runs, baseline []stats) {
	b.peerHeader()
	total, each := opCPU(runs)
	rate, cpu := "baseline", "baseline"
	if baseline != nil {
		rate, cpu = ratio(runs, baseline, stats.rps), ratio(runs, baseline, stats.serverCPUPerOp)
	}
	fmt.Fprintf(&b.peerTable, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", scenario, name,
		median(runs, stats.rps),
		ms(median(runs, func(s stats) float64 { return float64(s.percentile(0.5)) })),
		ms(median(runs, func(s stats) float64 { return float64(s.percentile(0.99)) })),
		us(total), each, rate, cpu)
}

// peerHeader starts the peers' table.
func (b *bench) peerHeader() {
	if b.peerTable.Len() == 0 {
		fmt.Fprintln(&b.peerTable, "\n| scenario | target | ops/s | p50 | p99 | server CPU/op | of which | ops/s vs baseline | CPU/op vs baseline |")
		fmt.Fprintln(&b.peerTable, "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
	}
}

// ratio is the medians' ratio a ÷ b of f, "—" where b's is 0 (nothing
// sampled, or /proc could not tell).
func ratio(a, b []stats, f func(stats) float64) string {
	if len(a) == 0 || len(b) == 0 {
		return "—"
	}
	d := median(b, f)
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", median(a, f)/d)
}

// targetNote states one target read on both throughput and CPU: the
// gateway's rate ÷ the peer's and the gateway's CPU per operation ÷ the
// peer's, each with its target ("" for none).
func (b *bench) targetNote(what string, gateway, peer []stats, rateTarget, cpuTarget string) {
	line := fmt.Sprintf("\n%s: gateway ÷ peer, ops/s %s", what, ratio(gateway, peer, stats.rps))
	if rateTarget != "" {
		line += " (target " + rateTarget + ")"
	}
	line += ", CPU/op " + ratio(gateway, peer, stats.serverCPUPerOp)
	if cpuTarget != "" {
		line += " (target " + cpuTarget + ")"
	}
	fmt.Fprintln(&b.notes, line)
}
