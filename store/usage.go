package store

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// A school's usage: what it served, counted in memory by each gateway
// instance on the request path and added by each, about once a minute,
// to time buckets in the store: a minute's bucket and an hour's. Buckets
// hold counts that only add up, so that several instances adding to one
// bucket make one figure, and nothing per person: no address, no
// subject, no client.

// UsageStore keeps a school's usage buckets.
type UsageStore interface {
	// AddUsage applies PlanUsage(deltas) in one transaction: it adds each
	// planned bucket's counts to the stored bucket of the same span and
	// start (one not stored yet starts at zero), keeps the later of the
	// stored and the planned LastActive, and deletes the buckets that
	// start before the plan's KeepFrom of their span. Instances adding
	// at once each add all of theirs: nothing is lost or counted twice.
	AddUsage(ctx context.Context, deltas []UsageDelta) error
	// LoadUsage returns every bucket kept, ordered by span then start,
	// and the last activity: a school never active has neither.
	LoadUsage(ctx context.Context) (*Usage, error)
}

// The spans of the buckets: a delta is added to its minute's and to its
// hour's.
const (
	UsageMinute = time.Minute
	UsageHour   = time.Hour
)

// How long buckets are kept, counted back from the latest minute added:
// the views read the last hour of minutes and the last day of hours;
// the half hour and the hour more take the flush of an instance that
// comes late (its flush failed and is retried, or its clock is behind)
// without losing it. So a school keeps at most 91 minute buckets and
// 26 hour buckets (both ends counted), however long it runs.
const (
	UsageMinutesKept = 90 * time.Minute
	UsageHoursKept   = 25 * time.Hour
)

// Cause is why a request was refused for want of capacity or of the
// school's own systems: each answers with one status, 429, 503 or 504.
type Cause int

// The causes. Their names are stored; their order is not.
const (
	// CauseRateLimited: an abuse limit of the authorization server's
	// endpoints, per address or client (429).
	CauseRateLimited Cause = iota
	// CauseBudgetRequests: the school's own request budget (429).
	CauseBudgetRequests
	// CauseBudgetMCPAnonymous: the school's budget of anonymous /mcp
	// calls (429).
	CauseBudgetMCPAnonymous
	// CauseMCPAnonymousAddress: the per-address limit of anonymous /mcp
	// calls (429).
	CauseMCPAnonymousAddress
	// CauseFairShare: the instance was contended and the school had used
	// its share (503).
	CauseFairShare
	// CauseLegacyBusy: too many requests were waiting on the school's
	// legacy server (503).
	CauseLegacyBusy
	// CauseStoreUnavailable: the school's store failed (503).
	CauseStoreUnavailable
	// CauseLegacyTimeout: the legacy server did not answer in time (504).
	CauseLegacyTimeout
	// NumCauses is how many causes there are.
	NumCauses
)

var causes = [NumCauses]struct {
	name   string
	status int
}{
	CauseRateLimited:         {"rate_limited", 429},
	CauseBudgetRequests:      {"budget_requests", 429},
	CauseBudgetMCPAnonymous:  {"budget_mcp_anonymous", 429},
	CauseMCPAnonymousAddress: {"mcp_anonymous_address", 429},
	CauseFairShare:           {"fair_share", 503},
	CauseLegacyBusy:          {"legacy_busy", 503},
	CauseStoreUnavailable:    {"store_unavailable", 503},
	CauseLegacyTimeout:       {"legacy_timeout", 504},
}

// String is the cause's name, as stored and shown.
func (c Cause) String() string {
	if c < 0 || c >= NumCauses {
		return "unknown"
	}
	return causes[c].name
}

// Status is the HTTP status a request refused for c is answered with.
func (c Cause) Status() int { return causes[c].status }

// CauseNamed is the cause of a name, false for a name that is none.
func CauseNamed(name string) (Cause, bool) {
	for c := range NumCauses {
		if causes[c].name == name {
			return c, true
		}
	}
	return 0, false
}

// CauseStatuses are the statuses of the causes, in order.
var CauseStatuses = []int{429, 503, 504}

// UsageCounts are what a school served over some time.
type UsageCounts struct {
	// Tokens counts the token endpoint's token responses.
	Tokens uint64
	// Refused counts the requests refused for what they sent: OAuth
	// error answers, and protected resources' and /mcp's challenges and
	// refusals (the causes are counted apart).
	Refused uint64
	// Causes counts the requests refused for each cause.
	Causes [NumCauses]uint64
	// Latency holds every request's duration; its count is the number of
	// requests.
	Latency Latency
}

// Requests is how many requests the counts are of.
func (c *UsageCounts) Requests() uint64 { return c.Latency.Count() }

// Add adds o's counts to c's.
func (c *UsageCounts) Add(o *UsageCounts) {
	c.Tokens += o.Tokens
	c.Refused += o.Refused
	for i, n := range o.Causes {
		c.Causes[i] += n
	}
	c.Latency.Add(&o.Latency)
}

// IsZero reports whether c counts nothing.
func (c *UsageCounts) IsZero() bool { return *c == UsageCounts{} }

// StatusTotal is how many requests the causes of one status refused.
func (c *UsageCounts) StatusTotal(status int) uint64 {
	var n uint64
	for i, k := range c.Causes {
		if Cause(i).Status() == status {
			n += k
		}
	}
	return n
}

// UsageStored is the stored form of counts: causes by name and latency
// bins by number, zeros left out, so that the set of causes may grow and
// a bucket costs what it holds.
type UsageStored struct {
	Tokens  uint64            `json:"tokens,omitempty"`
	Refused uint64            `json:"refused,omitempty"`
	Causes  map[string]uint64 `json:"causes,omitempty"`
	Latency map[string]uint64 `json:"latency,omitempty"`
}

// Stored is c's stored form.
func (c *UsageCounts) Stored() UsageStored {
	s := UsageStored{Tokens: c.Tokens, Refused: c.Refused, Causes: map[string]uint64{}, Latency: c.Latency.binMap()}
	for i, n := range c.Causes {
		if n != 0 {
			s.Causes[Cause(i).String()] = n
		}
	}
	return s
}

// Counts reads a stored form; a cause or bin this build does not know is
// dropped.
func (s *UsageStored) Counts() UsageCounts {
	c := UsageCounts{Tokens: s.Tokens, Refused: s.Refused}
	for name, n := range s.Causes {
		if k, ok := CauseNamed(name); ok {
			c.Causes[k] += n
		}
	}
	c.Latency.setBins(s.Latency)
	return c
}

// UsageBucket is the counts of one minute or one hour.
type UsageBucket struct {
	// Span is UsageMinute or UsageHour; Start a whole one of it, UTC.
	Span  time.Duration
	Start time.Time
	UsageCounts
}

// UsageDelta is what one instance served in one minute and has not added
// to the store yet.
type UsageDelta struct {
	// Minute is the minute's start.
	Minute time.Time
	UsageCounts
	// LastActive is when the instance last served a request of the
	// school, zero if never.
	LastActive time.Time
}

// Usage is a school's stored buckets and its last activity.
type Usage struct {
	Buckets    []UsageBucket
	LastActive time.Time
}

// UsagePlan is what AddUsage does with deltas.
type UsagePlan struct {
	// Buckets are the counts to add, one per span and start, ordered by
	// span then start: every store takes its rows in that order, so two
	// instances adding at once never wait on each other in a cycle.
	Buckets []UsageBucket
	// LastActive is the latest of the deltas'.
	LastActive time.Time
	// KeepMinutesFrom and KeepHoursFrom are the starts of the oldest
	// buckets kept; older ones are deleted, and a delta older than its
	// minute's or its hour's is not added there.
	KeepMinutesFrom, KeepHoursFrom time.Time
}

// PlanUsage decides what adding deltas does: each delta's counts go to
// its minute's bucket and its hour's, and what is kept is counted back
// from the latest minute added.
func PlanUsage(deltas []UsageDelta) UsagePlan {
	var p UsagePlan
	var latest time.Time
	for i := range deltas {
		latest = later(latest, deltas[i].Minute.UTC().Truncate(UsageMinute))
		p.LastActive = later(p.LastActive, deltas[i].LastActive)
	}
	if !p.LastActive.IsZero() {
		p.LastActive = p.LastActive.UTC()
	}
	p.KeepMinutesFrom = latest.Add(-UsageMinutesKept)
	p.KeepHoursFrom = latest.Truncate(UsageHour).Add(-UsageHoursKept)
	for i := range deltas {
		d := &deltas[i]
		if d.IsZero() {
			continue
		}
		minute := d.Minute.UTC().Truncate(UsageMinute)
		if !minute.Before(p.KeepMinutesFrom) {
			p.Buckets = addBucket(p.Buckets, UsageMinute, minute, &d.UsageCounts)
		}
		if hour := minute.Truncate(UsageHour); !hour.Before(p.KeepHoursFrom) {
			p.Buckets = addBucket(p.Buckets, UsageHour, hour, &d.UsageCounts)
		}
	}
	slices.SortFunc(p.Buckets, func(a, b UsageBucket) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), a.Start.Compare(b.Start))
	})
	return p
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// addBucket adds c to the bucket of span and start in bs, appending it
// if there is none.
func addBucket(bs []UsageBucket, span time.Duration, start time.Time, c *UsageCounts) []UsageBucket {
	for i := range bs {
		if bs[i].Span == span && bs[i].Start.Equal(start) {
			bs[i].Add(c)
			return bs
		}
	}
	return append(bs, UsageBucket{Span: span, Start: start, UsageCounts: *c})
}

// Add adds deltas not stored yet (an instance's own, in memory) to u, as
// AddUsage would add them to the store, without deleting anything.
func (u *Usage) Add(deltas []UsageDelta) {
	p := PlanUsage(deltas)
	for i := range p.Buckets {
		b := &p.Buckets[i]
		u.Buckets = addBucket(u.Buckets, b.Span, b.Start, &b.UsageCounts)
	}
	u.LastActive = later(u.LastActive, p.LastActive)
}

// UsageWindows are the windows the views show: the last 5 minutes, hour
// and day.
var UsageWindows = []time.Duration{5 * time.Minute, time.Hour, 24 * time.Hour}

// UsageWindow is a school's counts over a window ending now.
type UsageWindow struct {
	// Length is the window's; From is the start of its first bucket.
	Length time.Duration
	From   time.Time
	UsageCounts
}

// Window adds up the buckets of the window of length w ending at now:
// minute buckets for a window of an hour or less, hour buckets for a
// longer one; the bucket now is in and those before it that start less
// than w before its end. So a window is counted to its bucket: it spans
// between w less a bucket and w (5 minutes: the current minute and the
// four before it).
func (u *Usage) Window(w time.Duration, now time.Time) UsageWindow {
	span := UsageMinute
	if w > UsageHour {
		span = UsageHour
	}
	from := now.UTC().Truncate(span).Add(span - w)
	out := UsageWindow{Length: w, From: from}
	for i := range u.Buckets {
		b := &u.Buckets[i]
		if b.Span == span && !b.Start.Before(from) {
			out.Add(&b.UsageCounts)
		}
	}
	return out
}
