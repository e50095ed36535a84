package store

import (
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Latency is a histogram of request durations in fixed bins, so that
// histograms of several instances and of several minutes merge by adding
// counts bin by bin, and a percentile read from the merged histogram is
// that of all the requests together.
//
// The bins are log-linear in microseconds: 0, 1, 2 and 3 µs each have a
// bin; every octave [2^e, 2^(e+1)) above is split into four bins of equal
// width. The top bin holds everything from 1.75·2^28 µs (about 8
// minutes) up. A bin's width is at most a quarter of its lower bound, so
// a value reported as its bin's midpoint is within 12.5 % of any duration
// in the bin: a percentile read from a histogram is the true percentile
// of the durations counted give or take 12.5 % (the rank itself is exact,
// the counts being exact sums), below the top bin.
//
// The layout is part of the stored form (a bin is stored by its number):
// it never changes.
type Latency [LatencyBins]uint64

// LatencyBins is the number of bins of a Latency.
const LatencyBins = 112

// LatencyBin is the bin of a duration; a negative one is 0.
func LatencyBin(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < 4 {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us is in [2^e, 2^(e+1)), e >= 2
	i := 4*(e-1) + int(us>>(e-2)&3)
	return min(i, LatencyBins-1)
}

// latencyBounds are a bin's lowest duration and the lowest of the next
// bin, in microseconds.
func latencyBounds(i int) (low, high float64) {
	if i < 4 {
		return float64(i), float64(i + 1)
	}
	e := i/4 + 1
	octave := math.Ldexp(1, e)
	low = octave * (1 + float64(i%4)/4)
	return low, low + octave/4
}

// Add adds o's counts to h's.
func (h *Latency) Add(o *Latency) {
	for i, n := range o {
		h[i] += n
	}
}

// Count is how many durations h holds.
func (h *Latency) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the q-quantile (0 < q ≤ 1) of the durations h holds, as
// the midpoint of the bin that holds the duration of rank ⌈q·n⌉: p50 is
// Quantile(0.5), p99 Quantile(0.99). An empty histogram has none: 0.
func (h *Latency) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range h {
		if seen += c; seen >= rank {
			low, high := latencyBounds(i)
			if i < 4 {
				return time.Duration(low * float64(time.Microsecond))
			}
			return time.Duration((low + high) / 2 * float64(time.Microsecond))
		}
	}
	return 0 // not reached: the bins add up to n
}

// binMap is h's non-zero bins by number, the stored form.
func (h *Latency) binMap() map[string]uint64 {
	m := map[string]uint64{}
	for i, c := range h {
		if c != 0 {
			m[strconv.Itoa(i)] = c
		}
	}
	return m
}

// setBins adds the counts of a stored form to h; a bin this build does
// not know is dropped.
func (h *Latency) setBins(m map[string]uint64) {
	for k, c := range m {
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < LatencyBins {
			h[i] += c
		}
	}
}
