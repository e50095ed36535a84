package main

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSlopePerHour(t *testing.T) {
	mins := func(ms ...int) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, m := range ms {
			out[i] = time.Duration(m) * time.Minute
		}
		return out
	}
	for _, tc := range []struct {
		name string
		at   []time.Duration
		ys   []float64
		want float64
	}{
		{"flat", mins(0, 1, 2, 3), []float64{5, 5, 5, 5}, 0},
		{"one a minute", mins(5, 6, 7, 8), []float64{10, 11, 12, 13}, 60},
		{"falling", mins(0, 30, 60), []float64{100, 90, 80}, -20},
		{"noise around a line", mins(0, 1, 2, 3), []float64{1, 3, 3, 5}, 72}, // fit: 1.2 + 1.2/min
		{"one reading", mins(0), []float64{7}, 0},
		{"times alike", mins(2, 2, 2), []float64{1, 2, 3}, 0},
		{"lengths differ", mins(0, 1), []float64{1, 2, 3}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slopePerHour(tc.at, tc.ys); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("slopePerHour = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ys     []float64
		lo, hi float64
		ok     bool
	}{
		{"steady", []float64{100, 100, 100}, 0, 0, true},
		{"within", []float64{100, 95, 109.9, 91}, -0.09, 0.099, true},
		{"at the edge", []float64{100, 110, 90}, -0.10, 0.10, true},
		{"grew past", []float64{100, 105, 111}, 0, 0.11, false},
		{"fell past", []float64{100, 89}, -0.11, 0, false},
		{"no readings", nil, 0, 0, false},
		{"first unread", []float64{-1, 100}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, ok := band(tc.ys, 0.10)
			if ok != tc.ok || math.Abs(lo-tc.lo) > 1e-9 || math.Abs(hi-tc.hi) > 1e-9 {
				t.Errorf("band = %v, %v, %v; want %v, %v, %v", lo, hi, ok, tc.lo, tc.hi, tc.ok)
			}
		})
	}
}

func TestFlat(t *testing.T) {
	window := 25 * time.Minute
	for _, tc := range []struct {
		name  string
		ys    []float64
		slope float64 // per hour
		want  bool
	}{
		{"no slope", []float64{60, 60, 60}, 0, true},
		{"falling", []float64{60, 50, 40}, -50, true},
		{"two over the window", []float64{10, 11, 12}, 4.8, true},
		{"5 % of the mean", []float64{100, 100, 100}, 12, true},
		{"a goroutine a minute", []float64{60, 60, 60}, 60, false},
		{"within the readings' noise", []float64{50, 60, 50, 60}, 20, true}, // sd 5: 10 allowed, 8.3 risen
		{"past the noise", []float64{50, 60, 50, 60}, 30, false},            // 12.5 risen
		{"nothing read", nil, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flat(tc.ys, tc.slope, window); got != tc.want {
				t.Errorf("flat = %v, want %v", got, tc.want)
			}
		})
	}
}

const metricsText = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 57
go_goroutines2 1000
# TYPE go_memstats_heap_alloc_bytes gauge
go_memstats_heap_alloc_bytes 2.3456789e+07
schoolgate_requests_refused_total{cause="fair_share"} 12
schoolgate_requests_refused_total{cause="legacy_busy"} 3
schoolgate_requests_refused_total{site="http://a.localhost:1",cause="fair_share"} 5
schoolgate_requests_refused_total{cause="fair_share_x"} 100
malformed_value{cause="fair_share"} abc
`

func TestPromValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  float64
		ok    bool
	}{
		{"go_goroutines", nil, 57, true},
		{"go_memstats_heap_alloc_bytes", nil, 23456789, true},
		{"schoolgate_requests_refused_total", map[string]string{"cause": "fair_share"}, 17, true},
		{"schoolgate_requests_refused_total", map[string]string{"cause": "legacy_busy"}, 3, true},
		{"schoolgate_requests_refused_total", nil, 120, true},
		{"schoolgate_requests_refused_total", map[string]string{"cause": "budget_requests"}, 0, false},
		{"go_gorout", nil, 0, false}, // a prefix is not the name
		{"malformed_value", nil, 0, false},
		{"absent", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := promValue(metricsText, tc.name, tc.match)
			if got != tc.want || ok != tc.ok {
				t.Errorf("promValue = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestAfterWarmup(t *testing.T) {
	samples := []soakSample{{At: 0}, {At: time.Minute}, {At: 5 * time.Minute}, {At: 6 * time.Minute}}
	if got := afterWarmup(samples, 5*time.Minute); len(got) != 2 || got[0].At != 5*time.Minute {
		t.Errorf("afterWarmup = %v", got)
	}
	if got := afterWarmup(samples, time.Hour); got != nil {
		t.Errorf("afterWarmup past the end = %v, want none", got)
	}
}

// TestWritePlot checks that the plot is one well-formed SVG document,
// with a line per instance and series, its text escaped, and no point
// for a reading that failed.
func TestWritePlot(t *testing.T) {
	byInstance := map[string][]soakSample{
		"a": {{At: 0, RSS: 80 << 20, Heap: 20 << 20, Goroutines: 50, Files: 40, PGConns: 10},
			{At: time.Minute, RSS: 82 << 20, Heap: -1, Goroutines: 52, Files: 41, PGConns: 10}},
		"b": {{At: 0, RSS: 70 << 20, Heap: 18 << 20, Goroutines: 49, Files: 39, PGConns: 9},
			{At: time.Minute, RSS: 71 << 20, Heap: 19 << 20, Goroutines: 48, Files: 39, PGConns: 9}},
	}
	var b strings.Builder
	if err := writePlot(&b, `soak <10 schools> & "two"`, 2*time.Minute, 30*time.Second, soakPanels(byInstance, []string{"a", "b"})); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	elements := map[string]int{}
	var texts []string
	var heapPoints []string
	depth, inText := 0, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, b.String())
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (el.Name.Local != "svg" || el.Name.Space != "http://www.w3.org/2000/svg") {
				t.Errorf("root element %v, want svg in the SVG namespace", el.Name)
			}
			depth++
			elements[el.Name.Local]++
			inText = el.Name.Local == "text"
			if el.Name.Local == "polyline" && elements["polyline"] == 3 { // the heap panel's instance a
				for _, a := range el.Attr {
					if a.Name.Local == "points" {
						heapPoints = strings.Fields(a.Value)
					}
				}
			}
		case xml.EndElement:
			depth--
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(el))
			}
		}
	}
	if depth != 0 {
		t.Errorf("unbalanced elements: depth %d at the end", depth)
	}
	if got := elements["polyline"]; got != 2*len(soakSeries) {
		t.Errorf("%d lines, want %d (two instances × %d series)", got, 2*len(soakSeries), len(soakSeries))
	}
	if len(heapPoints) != 1 {
		t.Errorf("the heap line of instance a has points %v, want one (its second reading failed)", heapPoints)
	}
	if !strings.Contains(strings.Join(texts, "\n"), `soak <10 schools> & "two"`) {
		t.Errorf("the title is not in the text as given: %q", texts)
	}
	if !strings.Contains(b.String(), "instance b") || !strings.Contains(b.String(), "2 min") {
		t.Errorf("no legend or time axis:\n%s", b.String())
	}
}

func TestJWTIssuer(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name, token, want string
	}{
		{"iss", enc([]byte(`{"alg":"ES256"}`)) + "." + enc([]byte(`{"iss":"http://s1.localhost:8080","aud":"x"}`)) + ".sig", "http://s1.localhost:8080"},
		{"no iss", "e30." + enc([]byte(`{"aud":"x"}`)) + ".sig", ""},
		{"not a JWT", "opaque-token", ""},
		{"payload not base64url", "e30.!!!.sig", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jwtIssuer(tc.token); got != tc.want {
				t.Errorf("jwtIssuer = %q, want %q", got, tc.want)
			}
		})
	}
}
