package admission

import (
	"testing"
	"time"
)

// The scale is the processors Go may use over those the machine's other
// processes leave the instance, within [1, maxScale].
func TestScaleFor(t *testing.T) {
	for _, tc := range []struct {
		name        string
		procs, cpus int
		others      float64
		want        int64
	}{
		{"a machine of its own", 2, 2, 0, scaleOne},
		{"others idle but for noise", 2, 2, -0.1, scaleOne},
		{"half a processor taken", 2, 2, 0.5, scaleOne * 4 / 3},
		{"one taken", 2, 2, 1, 2 * scaleOne},
		{"all taken: half a processor a slot at least", 2, 2, 2, maxScale},
		{"one and a half taken: bounded", 2, 2, 1.5, maxScale},
		{"a big machine, Go limited to 2", 2, 64, 10, scaleOne},
		{"a big busy machine", 8, 16, 10, scaleOne * 8 / 6},
	} {
		if got := scaleFor(tc.procs, tc.cpus, tc.others); got != tc.want {
			t.Errorf("%s: scale %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The scale is read from the machine's busy time less the process's own
// over the interval between two calibrations.
func TestCapacityUpdate(t *testing.T) {
	defer func(r func() (int64, int64, int, bool)) { readSystem = r }(readSystem)
	busy, total := int64(0), int64(0)
	readSystem = func() (int64, int64, int, bool) { return busy, total, 2, true }
	var c capacity
	c.update(0, 0)
	// One second: the machine's 2 processors were 75 % busy (1.5 of
	// them), the process used 1 second of CPU: others took 0.5.
	busy, total = 150, 200
	c.update(int64(time.Second), int64(time.Second))
	if got, want := c.scale.Load(), int64(scaleOne*4/3); got != want {
		t.Fatalf("scale %d, want %d", got, want)
	}
	if got := time.Duration(c.scaled(int64(3 * time.Millisecond))); got < 3990*time.Microsecond || got > 4*time.Millisecond {
		t.Fatalf("3 ms scaled to %v, want 4ms", got)
	}
	// Where the machine's time is not read, the scale is 1.
	readSystem = func() (int64, int64, int, bool) { return 0, 0, 0, false }
	c.update(int64(2*time.Second), int64(2*time.Second))
	if c.scale.Load() != scaleOne {
		t.Fatalf("scale %d without a reading", c.scale.Load())
	}
}

// While shared, a request counts for its school for its time at the
// scale: its slot cools for the scaled time less what it held.
func TestReleaseScalesTheCount(t *testing.T) {
	g := sharedGate(Options{Concurrency: 2, Wait: time.Minute})
	g.cost.capacity.scale.Store(2 * scaleOne)
	g.cost.ns.Store(int64(time.Second))
	a, b := g.School(1), g.School(1)
	other := mustAdmit(t, b) // another school present
	sl := mustAdmit(t, a)
	t0 := now()
	sl.Release()
	g.mu.Lock()
	until := g.cooling.head().until
	g.mu.Unlock()
	// (held + 1 s) × 2 − held, held being next to nothing.
	if d := time.Duration(until - t0); d < 2*time.Second || d > 2*time.Second+time.Second/2 {
		t.Fatalf("cooling for %v, want about 2s", d)
	}
	other.Release()
}

// A school left alone, its neighbour gone (the instance still counted as
// shared for a while), is not scaled: the scale divides the instance
// between schools asking together.
func TestReleaseAloneIsNotScaled(t *testing.T) {
	g := sharedGate(Options{Concurrency: 2, Wait: time.Minute})
	g.sharedAt.Store(now() - int64(time.Second)) // shared, nobody else present
	g.cost.capacity.scale.Store(2 * scaleOne)
	g.cost.ns.Store(int64(time.Second))
	a := g.School(1)
	sl := mustAdmit(t, a)
	t0 := now()
	sl.Release()
	g.mu.Lock()
	until := g.cooling.head().until
	g.mu.Unlock()
	if d := time.Duration(until - t0); d < time.Second || d > time.Second+time.Second/2 {
		t.Fatalf("cooling for %v, want about 1s (unscaled)", d)
	}
}
