package admission

import (
	"runtime"
	"sync/atomic"

	"github.com/schoolgate/schoolgate/internal/cputime"
)

// The slots stand for the processors Go may use (GOMAXPROCS). When other
// processes of the machine take part of them — a database beside the
// gateway, another service, a load generator — a slot stands for less
// than a processor, and a school holding all slots but one holds more
// than its share of what the instance can have: with a victim school and
// a flooding one on 2 processors and the load generators on the same
// machine, the flood's one slot kept a whole processor busy out of what
// the generators left, and its neighbour kept 0.3–0.4× its throughput
// (BENCHMARKS.md, "With fair share"). So once a second the gate reads
// what the machine's other processes used (every processor's busy time
// from /proc/stat, less the process's own; niced processes' time is not
// busy, for they yield to the instance), and while another school is
// present each request counts for its school for its time scaled by the
// processors Go may use over those the instance could have: with 2 slots
// and 1.5 processors left, a request's time counts 4/3 as long. The scale
// divides what the instance has between schools asking together; a school
// alone, or left alone by its neighbour, is not slowed by it (a flood's
// burst right after its neighbour went would wait past its bound for
// nothing). On a machine of its own the scale is 1 and nothing changes;
// where the machine's time is not read, neither.

// scaleOne is a scale of 1, in the fixed point the gate keeps it.
const scaleOne = 1024

// maxScale bounds the scale: a slot stands for half a processor at
// least, however busy the machine, so that on a machine overloaded by
// others a school's requests are not held to a sliver of it and refused
// for waiting (the bound is the fair share's, not the machine's).
const maxScale = 2 * scaleOne

// capacity reads the machine's processors' time, under overhead's mu.
type capacity struct {
	// scale is the processors Go may use over those the instance could
	// have, times scaleOne.
	scale atomic.Int64
	// The last reading: the machine's busy and total ticks, the
	// process's CPU time and when (gate clock).
	busy, total, cpu, at int64
	read                 bool
}

// readSystem reads the machine's processors' time; tests replace it.
var readSystem = cputime.System

// update reads the machine again at t, the process having used cpu, and
// sets the scale from the interval since the last reading.
func (c *capacity) update(cpu, t int64) {
	busy, total, cpus, ok := readSystem()
	if !ok {
		c.scale.Store(scaleOne)
		return
	}
	if c.read && total > c.total && t > c.at {
		machine := float64(busy-c.busy) / float64(total-c.total) * float64(cpus)
		ours := float64(cpu-c.cpu) / float64(t-c.at)
		c.scale.Store(scaleFor(runtime.GOMAXPROCS(0), cpus, machine-ours))
	}
	c.busy, c.total, c.cpu, c.at, c.read = busy, total, cpu, t, true
}

// scaleFor is the scale for procs processors Go may use on a machine of
// cpus processors whose other processes kept others of them busy.
func scaleFor(procs, cpus int, others float64) int64 {
	p := float64(procs)
	avail := min(max(float64(cpus)-max(others, 0), p*scaleOne/maxScale), p)
	return int64(p / avail * scaleOne)
}

// scaled is a request's time t counted for its school at the scale.
func (c *capacity) scaled(t int64) int64 {
	if k := c.scale.Load(); k > scaleOne {
		return t * k / scaleOne
	}
	return t
}
