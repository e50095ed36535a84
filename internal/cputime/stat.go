package cputime

import (
	"strconv"
	"strings"
)

// parseStat reads /proc/stat's text: its first line, the processors
// together ("cpu  user nice system idle iowait irq softirq steal ..."),
// and how many "cpuN" lines follow.
func parseStat(text string) (busy, total int64, cpus int, ok bool) {
	lines := strings.Split(text, "\n")
	f := strings.Fields(lines[0])
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, false
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return 0, 0, 0, false
		}
		v[i] = n
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy = user + system + irq + softirq + steal
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			cpus++
		}
	}
	// Niced processes' user time is not busy: they run on what the
	// instance leaves, and yield to it.
	return busy, busy + nice + idle + iowait, cpus, cpus > 0
}
