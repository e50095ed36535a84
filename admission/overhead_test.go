package admission

import "testing"

// fakeCPU makes the process's CPU time, as the overhead reads it, what
// the test sets, until the test ends.
func fakeCPU(t *testing.T) *int64 {
	cpu := new(int64)
	r := readCPU
	t.Cleanup(func() { readCPU = r })
	readCPU = func() (int64, bool) { return *cpu, true }
	return cpu
}

// The overhead is the process's CPU time per request less the CPU time a
// request spent in its slot: the holds scaled by the CPU share the
// sampled holds showed, averaged with the estimate before.
func TestOverheadEstimate(t *testing.T) {
	cpu := fakeCPU(t)
	var o overhead
	o.init(0)
	// 1,000 requests, each holding its slot 40 µs of wall time of which
	// half was CPU (the sampled ones said so), and the process spent
	// 70 µs of CPU time a request: 50 µs of it outside the slot.
	o.done.Store(1000)
	o.held.Store(1000 * 40_000)
	o.sampledWall.Store(40_000 * 31)
	o.sampledCPU.Store(20_000 * 31)
	*cpu = 1000 * 70_000
	o.calibrate(0)
	if got := o.ns.Load(); got != 50_000 {
		t.Fatalf("estimate %d ns, want 50000", got)
	}
	// Too few requests the next second: the estimate stays.
	o.done.Add(10)
	*cpu += 10_000_000
	o.calibrate(0)
	if got := o.ns.Load(); got != 50_000 {
		t.Fatalf("estimate %d ns after a quiet second, want it kept", got)
	}
	// 1,000 more at 30 µs outside: the average of the two.
	o.done.Add(1000)
	o.held.Add(1000 * 40_000)
	*cpu += 1000 * 50_000
	o.calibrate(0)
	if got := o.ns.Load(); got != 40_000 {
		t.Fatalf("estimate %d ns, want 40000 (50 and 30 averaged)", got)
	}
}

// What stores charged requests for work done on their behalf while they
// were paused (Slot.Charge) is theirs, not the work around every request.
func TestOverheadLeavesOutWhatWasCharged(t *testing.T) {
	cpu := fakeCPU(t)
	var o overhead
	o.init(0)
	// 1,000 requests holding 20 µs of CPU each; 100 µs of process CPU a
	// request, of which 60 µs were charged (a group commit's work): 20 µs
	// of work around each request is left.
	o.done.Store(1000)
	o.held.Store(1000 * 20_000)
	o.spent.Store(1000 * 60_000)
	*cpu = 1000 * 100_000
	o.calibrate(0)
	if got := o.ns.Load(); got != 20_000 {
		t.Fatalf("estimate %d ns, want 20000", got)
	}
}
