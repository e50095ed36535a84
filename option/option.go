// Package option holds the value types a school's configuration is
// written in, the same in JSON (a site block's, a registry record's) and
// in a Caddyfile: a duration and a rate. The options themselves are
// declared where they are used (school.Config, with the authorization
// server's authserver.Options embedded); this package is their leaf, so
// that both can name these types without either importing Caddy.
package option

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time as an option gives it: in JSON a number
// of nanoseconds or a string ParseDuration reads ("90s", "1h30m",
// "180d"); it is written back as nanoseconds. It reads what Caddy's own
// durations read, so that a configuration written for one reads the same
// for the other.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalJSON reads a number of nanoseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or a number of nanoseconds: %v", err)
	}
	*d = Duration(n)
	return nil
}

// maxDurationText bounds what ParseDuration reads: no option needs more,
// and a configuration comes from an operator's API as well as a file.
const maxDurationText = 1024

// ParseDuration reads a duration as time.ParseDuration does, with one
// unit more, d for a day of 24 hours: "180d", "1d12h", "1.5d".
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > maxDurationText {
		return 0, errors.New("a duration of more than 1024 characters")
	}
	if !strings.Contains(s, "d") {
		return time.ParseDuration(s)
	}
	// Each term "<number>d" is read alone and added as hours; what is
	// left, the terms of time.ParseDuration's units, is read by it.
	sign, rest := "", s
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		sign, rest = rest[:1], rest[1:]
	}
	var days float64
	var others strings.Builder
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] == '.' || rest[j] >= '0' && rest[j] <= '9') {
			j++
		}
		number, unit := rest[:i], rest[i:j]
		if number == "" {
			return 0, fmt.Errorf("time: invalid duration %q", s)
		}
		if unit == "d" {
			n, err := strconv.ParseFloat(number, 64)
			if err != nil {
				return 0, fmt.Errorf("time: invalid duration %q", s)
			}
			days += n
		} else {
			others.WriteString(rest[:j])
		}
		rest = rest[j:]
	}
	var d time.Duration
	if others.Len() > 0 {
		var err error
		if d, err = time.ParseDuration(others.String()); err != nil {
			return 0, fmt.Errorf("time: invalid duration %q", s)
		}
	}
	d += time.Duration(days * 24 * float64(time.Hour))
	if sign == "-" {
		d = -d
	}
	return d, nil
}

// Rate is "Events per Period, with a Burst": a limit's configuration.
type Rate struct {
	// Events allowed per Period. Required, positive.
	Events int `json:"events"`
	// Period of the rate. Required, positive.
	Period Duration `json:"period"`
	// Burst is how many events may come at once. Default: Events.
	Burst int `json:"burst,omitempty"`
}

// Check refuses a rate that is not positive, naming the option.
func (r *Rate) Check(option string) error {
	if r.Events <= 0 || r.Period <= 0 || r.Burst < 0 {
		return fmt.Errorf("%s: needs a positive rate and a burst of at least 1", option)
	}
	return nil
}

// BurstOrEvents is the burst, Events when none is given.
func (r *Rate) BurstOrEvents() int {
	if r.Burst == 0 {
		return r.Events
	}
	return r.Burst
}

// ParseRate reads "<events>/<s|m|h>" and an optional burst, as a
// Caddyfile writes a rate (30/m, 100/s 200), naming the option in its
// refusals. The burst defaults to the events.
func ParseRate(option string, args []string) (Rate, error) {
	if len(args) < 1 || len(args) > 2 {
		return Rate{}, fmt.Errorf("%s: expects <events>/<s|m|h> [<burst>]", option)
	}
	n, unit, ok := strings.Cut(args[0], "/")
	events, err := strconv.Atoi(n)
	period := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok || err != nil || events <= 0 || period == 0 {
		return Rate{}, fmt.Errorf("%s: %q is not <events>/<s|m|h>, e.g. 30/m", option, args[0])
	}
	burst := events
	if len(args) == 2 {
		if burst, err = strconv.Atoi(args[1]); err != nil || burst < 1 {
			return Rate{}, fmt.Errorf("%s: burst %q is not a positive number", option, args[1])
		}
	}
	return Rate{Events: events, Period: Duration(period), Burst: burst}, nil
}
