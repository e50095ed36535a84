package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/procstat"
)

// The soak's samples (soak.go): what each Caddy instance holds, read
// every interval from /proc, from its admin API's /metrics and from
// PostgreSQL's pg_stat_activity, with the schools built; and the pure reading of a series: its
// band around the first reading after the warm-up and its least-squares
// slope.

// soakSample is one instance's reading at one time.
type soakSample struct {
	At         time.Duration // since the traffic began
	RSS, Heap  int64         // bytes: resident, and the Go heap in use (go_memstats_heap_alloc_bytes)
	Goroutines int
	Files      int // open file descriptors (/proc/PID/fd)
	PGConns    int // its connections in pg_stat_activity (by application_name)
	Active     int // schools built (/schoolgate/health), at most max_active
	Load       string
}

// The series a sample holds, in the plot's and the summary's order.
var soakSeries = []struct {
	name, unit string
	value      func(soakSample) float64
}{
	{"RSS", "MB", func(s soakSample) float64 { return float64(s.RSS) / (1 << 20) }},
	{"Go heap in use", "MB", func(s soakSample) float64 { return float64(s.Heap) / (1 << 20) }},
	{"goroutines", "", func(s soakSample) float64 { return float64(s.Goroutines) }},
	{"open files", "", func(s soakSample) float64 { return float64(s.Files) }},
	{"connections to PostgreSQL", "", func(s soakSample) float64 { return float64(s.PGConns) }},
	{"schools built", "", func(s soakSample) float64 { return float64(s.Active) }},
}

// sample reads the instance: a reading that fails is -1 (plotted as a
// gap is not worth the code: the summary names it).
func (c *platformCaddy) sample(at time.Duration, pg map[string]int) soakSample {
	s := soakSample{At: at, RSS: -1, Heap: -1, Goroutines: -1, Files: openFiles(c.pid()), PGConns: pg[soakAppName(c.name)], Active: c.active(), Load: loadAverage()}
	if m, err := procstat.ReadMemory(c.pid()); err == nil {
		s.RSS = m.RSS
	}
	if text, err := c.metrics(); err == nil {
		if v, ok := promValue(text, "go_memstats_heap_alloc_bytes", nil); ok {
			s.Heap = int64(v)
		}
		if v, ok := promValue(text, "go_goroutines", nil); ok {
			s.Goroutines = int(v)
		}
	}
	return s
}

// metrics is the instance's /metrics (Caddy's admin API) as text.
func (c *platformCaddy) metrics() (string, error) {
	resp, err := http.Get("http://" + c.admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics: HTTP %d", resp.StatusCode)
	}
	return string(raw), nil
}

// soakAppName is the application_name an instance's DSN gives its
// connections, so that pg_stat_activity tells the instances apart.
func soakAppName(instance string) string { return "schoolgate-soak-" + instance }

// pgConnections counts the connections to database db by
// application_name.
func pgConnections(ctx context.Context, conn *pgx.Conn, db string) (map[string]int, error) {
	rows, err := conn.Query(ctx, `SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity WHERE datname = $1 GROUP BY 1`, db)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

// promValue sums the samples of metric name, in Prometheus's text
// format, whose labels include every pair of match; ok is false when no
// sample matched. A name is matched whole: go_goroutines is not
// go_goroutines_total.
func promValue(text, name string, match map[string]string) (float64, bool) {
	sum, found := 0.0, false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		labels := ""
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "), strings.HasPrefix(rest, "\t"):
		default:
			continue // a longer name
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || !labelsInclude(labels, match) {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// labelsInclude says whether a sample's label text (a="x",b="y")
// includes every pair of match. Label values of the metrics read here
// hold no quote or comma.
func labelsInclude(labels string, match map[string]string) bool {
	for k, v := range match {
		if !strings.Contains(","+labels+",", ","+k+"="+strconv.Quote(v)+",") {
			return false
		}
	}
	return true
}

// slopePerHour is the least-squares slope of ys over the times at, per
// hour; 0 for fewer than two times or times all alike.
func slopePerHour(at []time.Duration, ys []float64) float64 {
	n := float64(len(ys))
	if len(ys) < 2 || len(at) != len(ys) {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, y := range ys {
		x := at[i].Hours()
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// band is how far the readings stray from the first: the lowest and the
// highest as fractions of it (-0.04, +0.07), and whether both are within
// ±limit. With no readings, or a first of zero or less, ok is false.
func band(ys []float64, limit float64) (lo, hi float64, ok bool) {
	if len(ys) == 0 || ys[0] <= 0 {
		return 0, 0, false
	}
	for _, y := range ys {
		d := y/ys[0] - 1
		lo, hi = math.Min(lo, d), math.Max(hi, d)
	}
	const eps = 1e-9 // 110/100 - 1 is a hair above 0.1 in floating point
	return lo, hi, lo >= -limit-eps && hi <= limit+eps
}

// flat says whether a series has no upward trend: what its slope adds
// over the window is within the readings' own noise (twice their
// standard deviation: the goroutines and files of the requests in flight
// at the moment of a reading), or 5 % of their mean, or 2, whichever is
// most. A leak of one goroutine a minute adds 25 over 25 minutes, above
// the few of a reading's noise.
func flat(ys []float64, slope float64, window time.Duration) bool {
	if len(ys) == 0 {
		return true
	}
	mean, sq := 0.0, 0.0
	for _, y := range ys {
		mean += y
	}
	mean /= float64(len(ys))
	for _, y := range ys {
		sq += (y - mean) * (y - mean)
	}
	sd := math.Sqrt(sq / float64(len(ys)))
	return slope*window.Hours() <= math.Max(2, math.Max(0.05*mean, 2*sd))
}

// afterWarmup is the samples taken at or after warm.
func afterWarmup(samples []soakSample, warm time.Duration) []soakSample {
	for i, s := range samples {
		if s.At >= warm {
			return samples[i:]
		}
	}
	return nil
}
