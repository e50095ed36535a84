package school

import (
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// usageRecorder counts a school's requests in memory, on the request
// path: a few atomic additions to counters of the school's own, no lock,
// no allocation, no store. The counts go to the store in the background
// (usageflush.go) as store.UsageDelta values, one per minute.
//
// Two slots take turns by minute: a request ending in minute m counts in
// slot m%2, tagged m. A flush during minute m takes the slot of m-1,
// which no request counts in any more, whole and attributed to its own
// minute, however late in m the school's flush runs (each school's is at
// its own point of the minute). A count that lands in a slot after its
// flush took it (a request that read the clock before the minute turned
// and counted after) stays there and goes with the next flush: stored
// late, never lost.
type usageRecorder struct {
	slots [2]usageSlot
	// last is the Unix second of the last request served.
	last atomic.Int64
}

// usageSlot is the counts of one minute.
type usageSlot struct {
	// minute is the Unix minute the slot counts, only ever raised.
	minute  atomic.Int64
	tokens  atomic.Uint64
	refused atomic.Uint64
	causes  [store.NumCauses]atomic.Uint64
	latency [store.LatencyBins]atomic.Uint64
}

// slot is the slot of the minute of now, tagged with it.
func (u *usageRecorder) slot(now time.Time) *usageSlot {
	m := now.Unix() / 60
	sl := &u.slots[m&1]
	for {
		// A slot still tagged two minutes back was flushed (or its
		// counts go with the new minute, if its flush is late).
		old := sl.minute.Load()
		if old >= m || sl.minute.CompareAndSwap(old, m) {
			return sl
		}
	}
}

// served counts a request that began at start and ended at end.
func (u *usageRecorder) served(start, end time.Time) {
	u.slot(end).latency[store.LatencyBin(end.Sub(start))].Add(1)
	// Stored once a second at most: a busy school's requests read the
	// value, which stays in every core's cache.
	if sec := end.Unix(); u.last.Load() < sec {
		u.last.Store(sec)
	}
}

func (u *usageRecorder) token(now time.Time)   { u.slot(now).tokens.Add(1) }
func (u *usageRecorder) refusal(now time.Time) { u.slot(now).refused.Add(1) }
func (u *usageRecorder) cause(c store.Cause, now time.Time) {
	u.slot(now).causes[c].Add(1)
}

// lastActive is when the school last served a request, zero if never.
func (u *usageRecorder) lastActive() time.Time {
	if sec := u.last.Load(); sec != 0 {
		return time.Unix(sec, 0).UTC()
	}
	return time.Time{}
}

// drain takes the counts of the minutes before now's out of the slots
// (every minute's, when all is set: the school is let go of), leaving
// zeros, and returns those that count something.
func (u *usageRecorder) drain(now time.Time, all bool) []store.UsageDelta {
	return u.read(now, all, (*atomic.Uint64).Swap)
}

// peek is drain without taking: what the slots hold now.
func (u *usageRecorder) peek(now time.Time) []store.UsageDelta {
	return u.read(now, true, func(n *atomic.Uint64, _ uint64) uint64 { return n.Load() })
}

func (u *usageRecorder) read(now time.Time, all bool, take func(*atomic.Uint64, uint64) uint64) []store.UsageDelta {
	current := now.Unix() / 60
	var out []store.UsageDelta
	for i := range u.slots {
		sl := &u.slots[i]
		m := sl.minute.Load()
		if m == 0 || !all && m >= current {
			continue
		}
		d := store.UsageDelta{Minute: time.Unix(m*60, 0).UTC()}
		d.Tokens, d.Refused = take(&sl.tokens, 0), take(&sl.refused, 0)
		for k := range sl.causes {
			if sl.causes[k].Load() != 0 {
				d.Causes[k] = take(&sl.causes[k], 0)
			}
		}
		for k := range sl.latency {
			if sl.latency[k].Load() != 0 {
				d.Latency[k] = take(&sl.latency[k], 0)
			}
		}
		if !d.IsZero() {
			out = append(out, d)
		}
	}
	return out
}
