package caddymodule

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/schoolgate/schoolgate/metrics"
)

func init() {
	httpcaddyfile.RegisterGlobalOption(appName, parseGlobalOption)
}

// FairShare is how the instance shares itself between schools while it
// is contended (docs/operator.md, "Fair share and budgets").
type FairShare struct {
	// Off admits every request as it comes, whoever's school it is for.
	// Default: false.
	Off bool `json:"off,omitempty"`
	// Concurrency is the number of slots while the instance is shared:
	// requests the gateway works on at once, each slot also held for the
	// HTTP work around a request, before requests wait for their
	// school's turn. Default: the processors Go may use (GOMAXPROCS).
	Concurrency int `json:"concurrency,omitempty"`
	// Queue is how many requests of one school may wait for a turn;
	// more are answered 503 at once. Default: 128.
	Queue int `json:"queue,omitempty"`
	// Wait is the longest a request waits for a turn before it is
	// answered 503 with Retry-After. Default: 1s.
	Wait caddy.Duration `json:"wait,omitempty"`
}

// validateGlobal checks the app's own options, naming the option.
func (a *App) validateGlobal() error {
	if f := a.FairShare; f != nil {
		switch {
		case f.Concurrency < 0:
			return fmt.Errorf("fair_share concurrency: %d is not a positive number", f.Concurrency)
		case f.Queue < 0:
			return fmt.Errorf("fair_share queue: %d is not a positive number", f.Queue)
		case f.Wait < 0:
			return fmt.Errorf("fair_share wait: %s is not a positive duration", time.Duration(f.Wait))
		}
	}
	if _, _, err := metrics.ParsePerSchool(a.MetricsPerSchool); err != nil {
		return err
	}
	return nil
}

// parseGlobalOption reads the global option
//
//	schoolgate {
//		fair_share off | {
//			concurrency <n>
//			queue       <n>
//			wait        <duration>
//		}
//		metrics_per_school none | all | top <n>
//	}
//
// into the schoolgate app's configuration.
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	a := new(App)
	if existing != nil {
		return nil, d.Err("schoolgate: the global option is given twice")
	}
	d.Next()
	if d.NextArg() {
		return nil, d.Err("schoolgate: options go in a block")
	}
	for d.NextBlock(0) {
		switch opt := d.Val(); opt {
		case "fair_share":
			if err := a.unmarshalFairShare(d); err != nil {
				return nil, err
			}
		case "metrics_per_school":
			args := d.RemainingArgs()
			v := ""
			for i, s := range args {
				if i > 0 {
					v += " "
				}
				v += s
			}
			if _, _, err := metrics.ParsePerSchool(v); err != nil || v == "" {
				return nil, d.Errf("metrics_per_school: %q is not none, all or top <n> with n a positive number", v)
			}
			a.MetricsPerSchool = v
		default:
			return nil, d.Errf("schoolgate: unknown global option %q (known: fair_share, metrics_per_school)", opt)
		}
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: appName, Value: raw}, nil
}

func (a *App) unmarshalFairShare(d *caddyfile.Dispenser) error {
	f := &FairShare{}
	a.FairShare = f
	if d.NextArg() {
		if d.Val() != "off" || d.NextArg() {
			return d.Err("fair_share: expects off, or options in a block")
		}
		f.Off = true
		return nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		switch opt {
		case "concurrency", "queue":
			var s string
			if err := oneArg(d, "fair_share "+opt, &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("fair_share %s: %q is not a positive number", opt, s)
			}
			if opt == "concurrency" {
				f.Concurrency = n
			} else {
				f.Queue = n
			}
		case "wait":
			if err := durationArg(d, "fair_share wait", &f.Wait); err != nil {
				return err
			}
		default:
			return d.Errf("fair_share: unknown option %q (known: concurrency, queue, wait)", opt)
		}
	}
	return nil
}
