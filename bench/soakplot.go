package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The soak's plot: one panel per series (RSS, heap, goroutines, open
// files, connections to PostgreSQL), a line per instance over the run's
// minutes, the warm-up shaded. Written by hand as SVG, so that the bench
// needs no plotting dependency and the file reads in any browser and on
// GitHub.

// plotLine is one instance's readings of a series.
type plotLine struct {
	name   string
	at     []time.Duration
	values []float64
}

// plotPanel is one series, its lines one per instance.
type plotPanel struct {
	title string
	lines []plotLine
}

// The plot's geometry, in SVG user units.
const (
	plotWidth   = 760
	panelHeight = 150
	plotLeft    = 70 // room for the y labels
	plotRight   = 20
	plotTop     = 40 // room for the title
	panelGap    = 40 // room for a panel's title and the x labels
)

var plotColours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// writePlot writes the panels as one SVG document: title on top, the
// panels one under another on a shared time axis of length total, the
// first warm of it shaded.
func writePlot(w io.Writer, title string, total, warm time.Duration, panels []plotPanel) error {
	height := plotTop + len(panels)*(panelHeight+panelGap) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", plotLeft, esc(title))
	minutes := math.Max(total.Minutes(), 1e-9)
	inner := float64(plotWidth - plotLeft - plotRight)
	xOf := func(d time.Duration) float64 { return plotLeft + inner*math.Min(d.Minutes()/minutes, 1) }
	for i, p := range panels {
		top := float64(plotTop + i*(panelHeight+panelGap) + panelGap/2)
		lo, hi := panelRange(p)
		yOf := func(v float64) float64 { return top + panelHeight - (v-lo)/(hi-lo)*panelHeight }
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", plotLeft, top-6, esc(p.title))
		if warm > 0 {
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="#eeeeee"/>`+"\n",
				plotLeft, top, xOf(warm)-plotLeft, panelHeight)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="none" stroke="#999999"/>`+"\n",
			plotLeft, top, inner, panelHeight)
		for _, v := range []float64{lo, (lo + hi) / 2, hi} {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, yOf(v)+4, esc(axisLabel(v)))
		}
		for k := range 5 {
			m := minutes * float64(k) / 4
			anchor := []string{"start", "middle", "middle", "middle", "end"}[k]
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s min</text>`+"\n",
				plotLeft+inner*float64(k)/4, top+panelHeight+14, anchor, esc(axisLabel(m)))
		}
		for j, l := range p.lines {
			colour := plotColours[j%len(plotColours)]
			var pts []string
			for k, v := range l.values {
				if v < 0 { // a reading that failed
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(l.at[k]), yOf(v)))
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="end">%s</text>`+"\n",
				float64(plotWidth-plotRight)-float64(len(p.lines)-1-j)*90, top-6, colour, esc(l.name))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// panelRange is the y range of a panel: from zero (a leak shows as a
// slope, not as noise magnified) to a little above its highest reading.
func panelRange(p plotPanel) (lo, hi float64) {
	for _, l := range p.lines {
		for _, v := range l.values {
			hi = math.Max(hi, v)
		}
	}
	if hi <= 0 {
		return 0, 1
	}
	return 0, hi * 1.1
}

// axisLabel shows a figure with as few digits as it needs.
func axisLabel(v float64) string {
	switch {
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// esc escapes text for SVG.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// soakPanels are the samples of every instance as the plot's panels.
func soakPanels(byInstance map[string][]soakSample, names []string) []plotPanel {
	panels := make([]plotPanel, 0, len(soakSeries))
	for _, s := range soakSeries {
		title := s.name
		if s.unit != "" {
			title += " (" + s.unit + ")"
		}
		p := plotPanel{title: title}
		for _, name := range names {
			l := plotLine{name: "instance " + name}
			for _, smp := range byInstance[name] {
				l.at = append(l.at, smp.At)
				l.values = append(l.values, s.value(smp))
			}
			p.lines = append(p.lines, l)
		}
		panels = append(panels, p)
	}
	return panels
}
