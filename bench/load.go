package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/internal/procstat"
)

// A closed-loop load generator: each of c workers sends its next request
// as soon as the previous one is answered, for a duration or until a
// fixed amount of work is done. Latencies are kept whole (a few hundred
// thousand durations at most) so percentiles are exact.

// request performs one request; worker is the worker's index.
type request func(ctx context.Context, worker int) error

// stats is one measured run of one target.
type stats struct {
	requests  int
	failures  int
	firstErr  error
	elapsed   time.Duration
	latencies []time.Duration
	cpu       time.Duration // server CPU spent during the run
	written   int64         // bytes the server wrote to storage during the run
	// servers is the CPU each server process used during the run, where
	// it was sampled (-peers, opcpu.go).
	servers []serverUse
}

func (s stats) rps() float64 { return float64(s.requests) / s.elapsed.Seconds() }

func (s stats) percentile(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	i := int(float64(len(s.latencies)-1) * p)
	return s.latencies[i]
}

// cpuPerRequest is the server's CPU time per answered request.
func (s stats) cpuPerRequest() time.Duration {
	if s.requests == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.requests)
}

// writtenPerRequest is what the server wrote to storage per answered
// request: for the gateway, its bbolt files' pages and their fsyncs.
func (s stats) writtenPerRequest() float64 {
	if s.requests == 0 {
		return 0
	}
	return float64(s.written) / float64(s.requests)
}

// load runs req with c workers for d, or, when work > 0, until work
// requests have been sent (whichever comes first).
func load(c int, d time.Duration, work int, pid int, req request) stats {
	return loadCtx(context.Background(), c, d, work, pid, req)
}

// loadCtx is load that also ends when parent does.
func loadCtx(parent context.Context, c int, d time.Duration, work int, pid int, req request) stats {
	cpu0, w0 := processCPU(pid), processWritten(pid)
	// The clock starts before the run's deadline is set, so that a run
	// cut off by it lasted d at least.
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	var next atomic.Int64
	per := make([][]time.Duration, c)
	fails := make([]int, c)
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil {
				if work > 0 && next.Add(1) > int64(work) {
					return
				}
				t0 := time.Now()
				err := req(ctx, w)
				if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
					return // cut off by the end of the run, not a failure
				}
				per[w] = append(per[w], time.Since(t0))
				if err != nil {
					fails[w]++
					errOnce.Do(func() { firstErr = err })
				}
			}
		}(w)
	}
	wg.Wait()
	s := stats{elapsed: time.Since(start), cpu: processCPU(pid) - cpu0, written: processWritten(pid) - w0,
		firstErr: firstErr}
	for w := range per {
		s.latencies = append(s.latencies, per[w]...)
		s.failures += fails[w]
	}
	s.requests = len(s.latencies)
	slices.Sort(s.latencies)
	return s
}

// processCPU is a process's CPU time, 0 where /proc cannot tell.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	d, _ := procstat.CPU(pid)
	return d
}

// processWritten is what a process has written to storage, 0 where /proc
// cannot tell.
func processWritten(pid int) int64 {
	if pid == 0 {
		return 0
	}
	n, _ := procstat.WrittenBytes(pid)
	return n
}

// expect reads a response and checks its status and, if want is not
// empty, that the body contains it.
func expect(resp *http.Response, err error, status int, want string) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("HTTP %d (want %d): %.200s", resp.StatusCode, status, body)
	}
	if want != "" && !strings.Contains(string(body), want) {
		return fmt.Errorf("answer lacks %q: %.200s", want, body)
	}
	return nil
}

var errPoolEmpty = errors.New("the pool of prepared items is empty")
