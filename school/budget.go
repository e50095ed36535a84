package school

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/schoolgate/schoolgate/authserver"
)

// DefaultLegacyConcurrency is how many requests of one school may wait on
// its legacy server at once unless its budget says otherwise.
const DefaultLegacyConcurrency = 256

// DefaultLegacyTimeout is how long a request waits for the legacy
// server's answer (budget legacy_timeout) unless the school's budget says
// otherwise: what front proxies commonly wait by default, so that a
// legacy page that takes long (an export, a report) keeps working as it
// did behind one, while a legacy server that never answers holds each
// request's goroutine and connections a minute, not for ever. Past it the
// request is answered 504. It is the response-header timeout of the
// transport: once the header has come, the body may take as long as it
// takes (downloads, streams), and a request body still being sent does
// not count.
const DefaultLegacyTimeout = 60 * time.Second

// LegacyConcurrency is the budget's legacy_concurrency, 0 for the
// default (NewLegacy's).
func (o *Options) LegacyConcurrency() int {
	if o.Budget == nil {
		return 0
	}
	return o.Budget.LegacyConcurrency
}

// bucket is one rate of a school's budget: a token bucket shared by every
// request of the school on this instance. Where several instances serve
// the school (Config.Instances), each takes its part: the rate and the
// burst divided by their number, so that together they admit the budget.
type bucket struct {
	limit     authserver.Limit
	instances func() int
	// mu guards parts, the number of instances the limiter was set for.
	mu      sync.Mutex
	parts   int
	limiter *rate.Limiter
}

// newBucket returns the bucket of a limit; nil for none.
func newBucket(l authserver.Limit, instances func() int) *bucket {
	if l.Every <= 0 {
		return nil
	}
	b := &bucket{limit: l, instances: instances, parts: 1,
		limiter: rate.NewLimiter(rate.Every(l.Every), max(1, l.Burst))}
	return b
}

// ready reports whether the bucket has an event for a request now,
// without taking it; when not, how long until it would. A request is
// checked before it waits for its turn on the instance and takes its
// events (allow) only once admitted: a request refused for its turn
// must not spend the school's budget, and x/time/rate gives back no
// event taken before the moment it is given back at.
func (b *bucket) ready(now time.Time) (bool, time.Duration) {
	if b == nil {
		return true, 0
	}
	if b.instances != nil {
		b.share(now)
	}
	if tokens := b.limiter.TokensAt(now); tokens < 1 {
		return false, max(time.Duration((1-tokens)/float64(b.limiter.Limit())*float64(time.Second)), time.Millisecond)
	}
	return true, 0
}

// allow takes one event; when refused, it says how long until the next
// would be allowed. A nil bucket allows everything.
func (b *bucket) allow(now time.Time) (bool, time.Duration) {
	_, ok, wait := b.reserve(now)
	return ok, wait
}

// reserve is allow that also returns the event taken, for giving it back
// (CancelAt) when a second bucket refuses the request: nil when nothing
// was taken.
func (b *bucket) reserve(now time.Time) (*rate.Reservation, bool, time.Duration) {
	if b == nil {
		return nil, true, 0
	}
	if b.instances != nil {
		b.share(now)
	}
	r := b.limiter.ReserveN(now, 1)
	if !r.OK() {
		return nil, false, b.limit.Every
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, false, d
	}
	return r, true, 0
}

// share sets the limiter to this instance's part of the budget when the
// number of instances changed. The number is counted in the background
// (never on a request's path); reading it is a load.
func (b *bucket) share(now time.Time) {
	n := max(1, b.instances())
	b.mu.Lock()
	defer b.mu.Unlock()
	if n == b.parts {
		return
	}
	b.parts = n
	b.limiter.SetLimitAt(now, rate.Every(b.limit.Every*time.Duration(n)))
	b.limiter.SetBurstAt(now, max(1, (b.limit.Burst+n-1)/n))
}
