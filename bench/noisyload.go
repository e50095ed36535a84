package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// The victim's clients run in a process of their own (-serve load): in
// the harness's process they would be two goroutines among the flood's
// sixty-four, each waiting its turn on the Go scheduler behind the
// flood's work, so that the victim's tail would grow with the flood even
// from an instance that served it first. As a process of its own, the
// kernel schedules it as it schedules any other client of the machine.

// victimLoad is what the child is asked to do: clients sending the same
// request for a duration, to Caddy on port whatever the host name.
type victimLoad struct {
	Port, Clients int
	Duration      time.Duration
	Request       requestSpec
	Raw           bool // the lean generator (rawclient.go)
}

// victimResult is what the child measured: the stats of its run and its
// answers (answerCount's fields, exported for JSON).
type victimResult struct {
	Latencies               []time.Duration // sorted
	Failures                int
	FirstErr                string
	Elapsed                 time.Duration
	Status                  map[int]int
	Refused, RefusedWithout int
	Bad                     int
}

// serveLoad is the child: it reads a victimLoad from in, runs it, and
// writes the victimResult to out.
func serveLoad(in io.Reader, out io.Writer) error {
	var spec victimLoad
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		return fmt.Errorf("-serve load: %v", err)
	}
	t := newTally(spec.Clients)
	req := victimRequest(nil, spec.Request.asker(), t)
	if spec.Raw {
		raw, err := buildRaw(spec.Request)
		if err != nil {
			return fmt.Errorf("-serve load: %v", err)
		}
		rc := newRawClients(spec.Port, spec.Clients)
		defer rc.closeAll()
		req = func(ctx context.Context, w int) error {
			status, err := askRaw(ctx, rc, raw, t, w)
			if err == nil && status != 200 {
				err = fmt.Errorf("the victim answered HTTP %d", status)
			}
			return err
		}
	} else {
		client := clientFor(spec.Port, spec.Clients)
		defer client.CloseIdleConnections()
		req = victimRequest(client, spec.Request.asker(), t)
	}
	s := load(spec.Clients, spec.Duration, 0, 0, req)
	a := t.sum()
	r := victimResult{Latencies: s.latencies, Failures: s.failures, Elapsed: s.elapsed, Status: a.status,
		Refused: a.refused, RefusedWithout: a.refusedWithout, Bad: a.bad}
	if s.firstErr != nil {
		r.FirstErr = s.firstErr.Error()
	}
	return json.NewEncoder(out).Encode(r)
}

// runVictim runs the victim's load in a child process and returns its
// stats and answers.
func runVictim(ctx context.Context, spec victimLoad) (stats, answerCount, error) {
	self, err := os.Executable()
	if err != nil {
		return stats{}, answerCount{}, err
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return stats{}, answerCount{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-serve", "load")
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return stats{}, answerCount{}, fmt.Errorf("the victim's load: %v: %s", err, errOut.Bytes())
	}
	var r victimResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return stats{}, answerCount{}, fmt.Errorf("the victim's load answered %.200q: %v", out.Bytes(), err)
	}
	return r.stats(), r.answers(), nil
}

func (r victimResult) stats() stats {
	s := stats{requests: len(r.Latencies), failures: r.Failures, elapsed: r.Elapsed, latencies: r.Latencies}
	if r.FirstErr != "" {
		s.firstErr = fmt.Errorf("%s", r.FirstErr)
	}
	return s
}

func (r victimResult) answers() answerCount {
	return answerCount{status: r.Status, refused: r.Refused, refusedWithout: r.RefusedWithout, bad: r.Bad}
}
