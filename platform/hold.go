package platform

import "sync/atomic"

// Hold is how a built school is held: the requests in flight in it, a
// closed bit that, once set, lets no request in, and when a request last
// came in. The school is let go of (its store released, its background
// work ended) when the count reaches zero with the bit set, by whoever
// brings it there: the last request out, or the closing when none is in.
// A request let in never meets a school let go of. The zero Hold is open
// and idle.
type Hold struct {
	refs atomic.Int64
	// used is when a request last came in (Unix nanoseconds): the least
	// recently used idle school is let go of first (Bound).
	used atomic.Int64
}

// closedBit is set in refs once the school lets no request in; far above
// any count of requests in flight.
const closedBit = 1 << 62

// Start holds the school for the request that built it, before anyone
// else can reach it.
func (h *Hold) Start() { h.refs.Store(1) }

// Acquire lets a request in, unless the school is closed: then the
// request leaves at once, and letGo reports whether it was the last out
// of it, so the caller lets go of the school.
func (h *Hold) Acquire() (ok, letGo bool) {
	if h.refs.Add(1)&closedBit == 0 {
		return true, false
	}
	letGo, _ = h.Release()
	return false, letGo
}

// Release lets a request out. letGo reports that it was the last out of a
// closed school, which the caller lets go of; idle that it was the last
// out of an open one (past max_active with no idle school to let go of at
// the last build, the caller makes room: Bound.Over).
func (h *Hold) Release() (letGo, idle bool) {
	n := h.refs.Add(-1)
	return n == closedBit, n == 0
}

// Close lets no further request in, and reports whether the caller lets
// go of the school now (none was in flight); otherwise the last request
// out will. Closing a closed school does nothing.
func (h *Hold) Close() (letGo bool) {
	for {
		n := h.refs.Load()
		if n&closedBit != 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n|closedBit) {
			return n == 0
		}
	}
}

// CloseIdle closes the school if no request is in it, and reports whether
// it did; the caller then lets go of it.
func (h *Hold) CloseIdle() bool { return h.refs.CompareAndSwap(0, closedBit) }

// Closed reports whether the school lets requests in no more.
func (h *Hold) Closed() bool { return h.refs.Load()&closedBit != 0 }

// Idle reports whether no request is in the school.
func (h *Hold) Idle() bool { return h.refs.Load() == 0 }

// Touch records that a request came in at now (Unix nanoseconds).
func (h *Hold) Touch(now int64) { h.used.Store(now) }

// Used is when a request last came in (Unix nanoseconds).
func (h *Hold) Used() int64 { return h.used.Load() }
