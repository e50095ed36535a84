package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/internal/procstat"
	"github.com/schoolgate/schoolgate/registry"
)

// burstSize is how many schools one burst adds: a migration, a
// reseller's import.
const burstSize = 1000

// burstName is the school i of the burst; zero-padded, so that the
// issuers' order, in which a registry dir announces a batch of changes,
// is the order of the writes.
func burstName(i int) string { return fmt.Sprintf("burst%04d", i) }

// burst adds burstSize schools at once and measures how long until the
// last one written is served (polled every 10 ms at the last instance),
// the CPU each Caddy spent from the burst's start to then (applying the
// changes: reading the records, the host table, the logs), and how long
// until every school of the burst has answered its discovery (each asked
// once the last is served, 16 at a time, again every 10 ms until it
// answers; its first request builds it). A registry dir gets the files
// as a deploy tool writes them: written beforehand, then renamed in
// together; a postgres registry gets Put, 16 at once, timed within the
// burst.
func (p *platformRun) burst(kind string, reg registry.Registry, instances []*platformCaddy) error {
	ctx := context.Background()
	var rename func() error
	if kind == "dir" {
		var err error
		if rename, err = p.stageBurst(reg); err != nil {
			return err
		}
	}
	cpu0 := make([]time.Duration, len(instances))
	for i, c := range instances {
		cpu0[i], _ = procstat.CPU(c.pid())
	}
	if p.cfg.profile == "burst" {
		// Ten seconds: the burst and its builds, on this machine.
		go saveProfile(instances[0].admin, "bench-burst-"+kind+".pprof", 10)
	}
	began := time.Now()
	if rename != nil {
		if err := rename(); err != nil {
			return err
		}
	} else {
		var next atomic.Int64
		errs := make([]error, 16)
		var wg sync.WaitGroup
		for w := range errs {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < burstSize && errs[w] == nil; i = int(next.Add(1) - 1) {
					_, errs[w] = reg.Put(ctx, p.record(burstName(i), nil, ""))
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("the burst's writes: %v", err)
		}
	}
	written := time.Since(began)
	at := instances[len(instances)-1]
	last := burstName(burstSize - 1)
	if err := at.waitFor(p.host(last), began, time.Minute, func(status int, issuer string) bool {
		return status == http.StatusOK && issuer == p.issuer(last)
	}); err != nil {
		return err
	}
	lastServed := time.Since(began)
	cpu := make([]string, len(instances))
	var most time.Duration
	for i, c := range instances {
		d, _ := procstat.CPU(c.pid())
		most = max(most, d-cpu0[i])
		cpu[i] = fmt.Sprintf("%.2f", (d - cpu0[i]).Seconds())
	}
	var next atomic.Int64
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < burstSize && errs[w] == nil; i = int(next.Add(1) - 1) {
				name := burstName(i)
				for _, c := range instances {
					errs[w] = c.waitFor(p.host(name), began, time.Minute, func(status int, issuer string) bool {
						return status == http.StatusOK && issuer == p.issuer(name)
					})
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	all := time.Since(began)
	// The CPU of the builds too: every school's first request built it.
	built := make([]string, len(instances))
	for i, c := range instances {
		d, _ := procstat.CPU(c.pid())
		built[i] = fmt.Sprintf("%.2f", (d - cpu0[i]).Seconds())
	}
	p.bursts = append(p.bursts, fmt.Sprintf("| %s | %d | %d | %.2f s | %.2f s | %.2f s | %s | %s | ≤ 2 s, ≤ 1 CPU-s: %s, %s |", kind, len(instances), burstSize,
		written.Seconds(), lastServed.Seconds(), all.Seconds(), strings.Join(cpu, " / "), strings.Join(built, " / "), met(all <= 2*time.Second), met(most <= time.Second)))
	return nil
}

// stageBurst writes the burst's files into directories of 100 beside the
// registry dir, through a Dir of each, and returns what renames them in
// and syncs the registry dir: the burst a deploy tool makes.
func (p *platformRun) stageBurst(reg registry.Registry) (func() error, error) {
	d, ok := reg.(*registry.Dir)
	if !ok {
		return nil, fmt.Errorf("the dir registry's handle is a %T", reg)
	}
	path := filepath.Dir(d.DataDir(p.issuer(schoolName(0))))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	type move struct{ from, to string }
	var moves []move
	var stages []string
	for from := 0; from < burstSize; from += 100 {
		stage := filepath.Join(filepath.Dir(path), fmt.Sprintf("burst-%d", from))
		if err := os.MkdirAll(stage, 0o700); err != nil {
			return nil, err
		}
		stages = append(stages, stage)
		sd, err := registry.OpenDir(stage, nil, quiet)
		if err != nil {
			return nil, err
		}
		for i := from; i < min(from+100, burstSize); i++ {
			if _, err := sd.Put(ctx, p.record(burstName(i), nil, "")); err != nil {
				_ = sd.Close()
				return nil, err
			}
			name := strings.ReplaceAll(p.host(burstName(i)), ":", "_") + ".json"
			moves = append(moves, move{filepath.Join(stage, name), filepath.Join(path, name)})
		}
		if err := sd.Close(); err != nil {
			return nil, err
		}
	}
	return func() error {
		for _, m := range moves {
			if err := os.Rename(m.from, m.to); err != nil {
				return err
			}
		}
		for _, s := range stages {
			_ = os.RemoveAll(s)
		}
		return syncDir(path)
	}, nil
}

// saveProfile writes a CPU profile of seconds of the Caddy whose admin
// endpoint is admin to file; a failure is only printed.
func saveProfile(admin, file string, seconds int) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, seconds))
	if err == nil {
		defer resp.Body.Close()
		var f *os.File
		if f, err = os.Create(file); err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "the burst's profile: %v\n", err)
	}
}
