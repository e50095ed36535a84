package schedule

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eventually waits for cond, failing the test after a generous bound: the
// scheduler's work is asynchronous, and a loaded machine may be slow.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestJobRunsUntilItStops(t *testing.T) {
	s := New(2)
	var runs atomic.Int32
	s.Add(context.Background(), 0, func(context.Context) time.Duration {
		if runs.Add(1) == 3 {
			return 0
		}
		return time.Millisecond
	})
	eventually(t, "the job ended after three runs", func() bool { return s.Active() == 0 })
	if got := runs.Load(); got != 3 {
		t.Fatalf("runs = %d, want 3", got)
	}
}

func TestEndedOwnerLeavesTheQueueAtOnce(t *testing.T) {
	s := New(1)
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	s.Add(ctx, time.Hour, func(context.Context) time.Duration { runs.Add(1); return time.Hour })
	if s.Active() != 1 {
		t.Fatal("the job is queued")
	}
	cancel()
	eventually(t, "the cancelled job left the queue", func() bool { return s.Active() == 0 })
	if runs.Load() != 0 {
		t.Fatal("a cancelled job must not run")
	}
}

func TestCancelWhileRunning(t *testing.T) {
	s := New(1)
	ctx, cancel := context.WithCancel(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	s.Add(ctx, 0, func(ctx context.Context) time.Duration {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return time.Millisecond
	})
	<-started
	cancel()
	close(release)
	eventually(t, "the job ended after its run", func() bool { return s.Active() == 0 })
	time.Sleep(20 * time.Millisecond)
	if runs.Load() != 1 {
		t.Fatalf("no run may start after the owner ended: %d runs", runs.Load())
	}
}

func TestWorkersBoundConcurrency(t *testing.T) {
	const workers = 3
	s := New(workers)
	var mu sync.Mutex
	running, most := 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int32
	for range 30 {
		s.Add(ctx, 0, func(context.Context) time.Duration {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			done.Add(1)
			return 0
		})
	}
	eventually(t, "every job ran", func() bool { return done.Load() == 30 })
	if most > workers || most < 2 {
		t.Fatalf("at most %d jobs at once, saw %d", workers, most)
	}
}

func TestEarlierJobPreemptsTheWait(t *testing.T) {
	s := New(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Add(ctx, time.Hour, func(context.Context) time.Duration { return time.Hour })
	ran := make(chan struct{})
	s.Add(ctx, 0, func(context.Context) time.Duration { close(ran); return 0 })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a job due now waited behind one due in an hour")
	}
}

func TestNoGoroutineWhenIdle(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(4)
	ctx, cancel := context.WithCancel(context.Background())
	for range 100 {
		s.Add(ctx, time.Hour, func(context.Context) time.Duration { return time.Hour })
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("100 waiting jobs cost %d goroutines", n-before)
	}
	cancel()
	eventually(t, "the dispatcher exited with the queue empty", func() bool {
		return s.Active() == 0 && runtime.NumGoroutine() <= before
	})
}

func TestOffset(t *testing.T) {
	period := 10 * time.Minute
	seen := map[time.Duration]bool{}
	for _, k := range []string{"https://a.example", "https://b.example", "https://c.example", "https://d.example"} {
		o := Offset(k, period)
		if o < 0 || o >= period || o != Offset(k, period) {
			t.Fatalf("Offset(%s) = %v: must be stable and in [0, %v)", k, o, period)
		}
		seen[o] = true
	}
	if len(seen) < 3 {
		t.Fatal("different schools should mostly get different slots")
	}
	if Offset("x", 0) != 0 {
		t.Fatal("no period, no offset")
	}
}
