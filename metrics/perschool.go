package metrics

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics per school (the global option metrics_per_school): which
// schools have series of their own beside the instance's totals.
const (
	PerSchoolNone = "none"
	PerSchoolAll  = "all"
	PerSchoolTop  = "top"
)

// ParsePerSchool reads none, all or "top <n>"; "" is the default,
// returned as "".
func ParsePerSchool(v string) (mode string, top int, err error) {
	switch v {
	case "", PerSchoolNone, PerSchoolAll:
		return v, 0, nil
	}
	var n string
	if _, err := fmt.Sscanf(v, "top %s", &n); err == nil {
		if top, err := strconv.Atoi(n); err == nil && top > 0 {
			return PerSchoolTop, top, nil
		}
	}
	return "", 0, fmt.Errorf("metrics_per_school: %q is not none, all or top <n> with n a positive number", v)
}

// PerSchool is which schools have series of their own (metrics_per_school):
// none, every one, or the top schools by traffic.
type PerSchool struct {
	mode string // PerSchoolNone, PerSchoolAll, PerSchoolTop
	top  int
}

// The top by traffic ranks the schools at each scrape by their recent
// traffic, the events they counted (schoolCounters.events), weighed down
// by half every trafficHalfLife, so that a school busy once and idle
// since leaves the top. Ranked at the scrape, the top costs the request
// path nothing and leaves no stale series: a school out of it is simply
// not collected. A school in the top keeps its place until another's
// traffic is more than incumbency times its own, so that two schools of
// about equal traffic do not take turns at each scrape.
const (
	trafficHalfLife = 10 * time.Minute
	incumbency      = 1.25
)

// SetPerSchool chooses which schools have series from the next scrape on.
func (m *Metrics) SetPerSchool(p PerSchool) { m.per.Store(&p) }

// Describe sends every family's descriptions, the instance's and a
// school's: Caddy's registry checks each series against them.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range families {
		ch <- f.total
		ch <- f.PerSchool
	}
}

// Collect sends the instance's totals, then the series of the schools
// metrics_per_school chooses now: a school that left the top, or was
// removed, has none from this scrape on, so nothing of it is left
// behind.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for fi, f := range families {
		var shards [totalShards][]atomic.Uint64
		for i := range m.totals {
			shards[i] = m.totals[i].slots(fi)
		}
		for slot, labels := range f.slotLabels {
			var v uint64
			for _, slots := range shards {
				if slots != nil {
					v += slots[slot].Load()
				}
			}
			if v > 0 || f.zeros && !slices.Contains(labels, otherValue) {
				ch <- prometheus.MustNewConstMetric(f.total, prometheus.CounterValue, float64(v), labels...)
			}
		}
	}
	for _, sc := range m.chosen(time.Now()) {
		for fi, f := range families {
			slots := sc.slots(fi)
			if slots == nil {
				continue
			}
			for slot := range f.slotLabels {
				if v := slots[slot].Load(); v > 0 {
					labels := append([]string{sc.site}, f.slotLabels[slot]...)
					ch <- prometheus.MustNewConstMetric(f.PerSchool, prometheus.CounterValue, float64(v), labels...)
				}
			}
		}
	}
}

// chosen are the schools whose series a scrape at now shows.
func (m *Metrics) chosen(now time.Time) []*schoolCounters {
	p := m.per.Load()
	if p != nil && p.mode == PerSchoolNone {
		return nil
	}
	m.mu.Lock()
	all := make([]*schoolCounters, 0, len(m.schools))
	for _, sc := range m.schools {
		all = append(all, sc)
	}
	m.mu.Unlock()
	if p == nil || p.mode != PerSchoolTop {
		return all
	}
	return m.rank(all, p.top, now)
}

// rank returns the top n of schools by traffic, updating each one's score
// with what it counted since the last ranking. It keeps the n best in a
// heap as it goes: a ranking is a pass over the schools, with no sort of
// them all.
func (m *Metrics) rank(schools []*schoolCounters, n int, now time.Time) []*schoolCounters {
	m.rankMu.Lock()
	defer m.rankMu.Unlock()
	decay := 0.0
	if !m.ranked.IsZero() {
		decay = math.Exp2(-float64(now.Sub(m.ranked)) / float64(trafficHalfLife))
	}
	m.ranked = now
	best := make(rankHeap, 0, n)
	for _, sc := range schools {
		counted := sc.events.Load()
		sc.score = sc.score*decay + float64(counted-sc.counted)
		sc.counted = counted
		r := ranked{sc: sc, score: sc.score}
		if sc.inTop {
			r.score *= incumbency
		}
		sc.inTop = false
		switch {
		case r.score <= 0:
		case len(best) < n:
			heap.Push(&best, r)
		case best[0].less(r):
			best[0] = r
			heap.Fix(&best, 0)
		}
	}
	top := make([]*schoolCounters, len(best))
	for i, r := range best {
		r.sc.inTop = true
		top[i] = r.sc
	}
	return top
}

// ranked is a school with its score in a ranking, its incumbency
// included.
type ranked struct {
	sc    *schoolCounters
	score float64
}

// less orders by score, then by issuer (the later one ranks lower), so
// that a ranking of equal scores is the same at each scrape.
func (r ranked) less(o ranked) bool {
	if r.score != o.score {
		return r.score < o.score
	}
	return r.sc.site > o.sc.site
}

// rankHeap is a min-heap of the best so far: its root is the one to
// displace.
type rankHeap []ranked

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// PerSchoolOf is which schools have series in a config of gateways site
// blocks and, if platform, a school_platform: metrics_per_school's
// choice, by default every school of a config of site blocks only (a few
// schools) and none beside a platform, whose schools are thousands. A
// top above the schools' count is refused where the count is the
// config's, its site blocks: it names a schools' count that is not
// there. A platform's count is its registry's, which changes while the
// config runs: a top above it is the top of a registry still growing, or
// one that shrank, and a config that read well must not fail at its
// next reload because schools were removed.
func PerSchoolOf(option string, gateways int, platform bool) (PerSchool, error) {
	mode, top, err := ParsePerSchool(option)
	switch {
	case err != nil:
		return PerSchool{}, err
	case mode == "" && platform:
		mode = PerSchoolNone
	case mode == "":
		mode = PerSchoolAll
	case mode == PerSchoolTop && !platform && top > gateways:
		return PerSchool{}, fmt.Errorf("metrics_per_school: top %d is more than the %d schools of this config (its site blocks); "+
			"write all, or a top of at most %d", top, gateways, gateways)
	}
	return PerSchool{mode: mode, top: top}, nil
}
