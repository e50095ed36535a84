package admission

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/internal/cputime"
)

// overhead measures the CPU time the process spends on a request outside
// the gate: reading and routing it before, writing the answer after,
// the legacy server's proxying, TLS. It is the process's CPU time per
// request given back, less the CPU time a request spent holding its slot,
// over the last calibration interval, averaged with the one before. The
// latter is the average hold times the CPU share of a hold, read on one
// request in sampleEvery from its thread's CPU clock: on a machine whose
// processors other processes share, a hold takes longer than the CPU it
// uses, and the hold alone would leave too little for the rest.
type overhead struct {
	// ns is the estimate.
	ns atomic.Int64
	// done and held are the requests given back and the time they held
	// their slots, since the start, as sampled; sampledWall and
	// sampledCPU the sampled holds that ended on their thread and the CPU
	// time it used meanwhile.
	done        atomic.Int64
	held        atomic.Int64
	spent       atomic.Int64
	sampledWall atomic.Int64
	sampledCPU  atomic.Int64
	// next is when the next calibration is due.
	next atomic.Int64

	// capacity is the share of the machine the instance can have
	// (capacity.go), read with each calibration.
	capacity capacity

	// The last calibration's readings, under mu; share is the CPU share
	// of a hold the samples last showed.
	mu                          sync.Mutex
	cpu, doneAt, heldAt         int64
	spentAt                     int64
	sampledWallAt, sampledCPUAt int64
	share                       float64
}

// sampleEvery: one slot in this many is measured (sample).
const sampleEvery = 32

const (
	// calibrateEvery is how often the estimate is made again.
	calibrateEvery = int64(time.Second)
	// calibrateMin is the fewest requests an interval needs for its
	// reading: with fewer, the process's background work (catalog
	// refreshes, purges, collection) would pass for the requests'.
	calibrateMin = 200
	// maxOverhead bounds the estimate.
	maxOverhead = int64(10 * time.Millisecond)
)

func (o *overhead) init(t int64) {
	o.next.Store(t + calibrateEvery)
	o.share = 1
	o.cpu, _ = readCPU()
	o.capacity.scale.Store(scaleOne)
	o.capacity.update(o.cpu, t)
}

// readCPU reads the process's CPU time; tests replace it.
var readCPU = cputime.Process

func (o *overhead) calibrate(t int64) {
	if !o.mu.TryLock() {
		return
	}
	defer o.mu.Unlock()
	cpu, ok := readCPU()
	if !ok {
		return
	}
	o.capacity.update(cpu, t)
	done, held, spent := o.done.Load(), o.held.Load(), o.spent.Load()
	sw, sc := o.sampledWall.Load(), o.sampledCPU.Load()
	n := done - o.doneAt
	if n >= calibrateMin {
		if dw, dc := sw-o.sampledWallAt, sc-o.sampledCPUAt; dw > 0 && dc > 0 {
			o.share = min(float64(dc)/float64(dw), 1)
		}
		inSlots := int64(float64(held-o.heldAt) * o.share)
		est := ((cpu - o.cpu) - inSlots - (spent - o.spentAt)) / n
		est = min(max(est, 0), maxOverhead)
		if prev := o.ns.Load(); prev > 0 {
			est = (prev + est) / 2
		}
		o.ns.Store(est)
	}
	o.cpu, o.doneAt, o.heldAt, o.spentAt = cpu, done, held, spent
	o.sampledWallAt, o.sampledCPUAt = sw, sc
}

// sample is a sampled slot's reading when taken: one slot in
// sampleEvery, chosen by the low bits of the clock, counts for
// sampleEvery in the estimate, and reads its thread's CPU clock.
type sample struct {
	sampled bool
	cpu     int64
	thread  int32
}

// begin samples one slot in sampleEvery.
func (o *overhead) begin(t int64) sample {
	if t%sampleEvery != 0 {
		return sample{}
	}
	cpu, thread, _ := cputime.Thread()
	return sample{sampled: true, cpu: cpu, thread: thread}
}

// end counts a sampled slot given back at t after holding it for held,
// stores having spent spent on its behalf while it was paused (charged
// to its school, so not the work around requests), and makes the
// estimate again when it is due.
func (o *overhead) end(s sample, held, spent, t int64) {
	o.done.Add(sampleEvery)
	o.held.Add(held * sampleEvery)
	if spent > 0 {
		o.spent.Add(spent * sampleEvery)
	}
	if s.thread != 0 {
		cpu, thread, ok := cputime.Thread()
		if ok && thread == s.thread && cpu >= s.cpu && cpu-s.cpu <= held {
			o.sampledWall.Add(held)
			o.sampledCPU.Add(cpu - s.cpu)
		}
	}
	if next := o.next.Load(); t >= next && o.next.CompareAndSwap(next, t+calibrateEvery) {
		o.calibrate(t)
	}
}
