// Command bench measures the gateway against plain Caddy in one run.
//
//	go run ./bench            # the full run (a few minutes)
//	go run ./bench -smoke     # seconds: proves the harness works, no figures worth quoting
//	go run ./bench -schools 100,500,1000   # what many schools in one Caddy cost
//	go run ./bench -platform 10000         # school_platform: 10,000 schools of a registry (dir, postgres)
//	go run ./bench -smoke -platform 50     # the same, tiny: checks the harness
//	go run ./bench -only token -ab <commit> # the token endpoint beside an older build (also protected, discovery)
//	go run ./bench -peers                  # forward_auth → oauth2-proxy, node-oidc-provider and Ory Hydra beside the gateway
//	go run ./bench -noisy                  # a victim school alone and while a neighbour floods the same Caddy (noisy.go)
//	go run ./bench -soak 30m               # two platform instances on PostgreSQL under traffic and churn, sampled (soak.go)
//
// It builds Caddy with the schoolgate modules, starts its own minimal
// legacy server (with a generated catalog) and an mcp-go no-op server,
// and runs one Caddy with its sites: the gateway in front of the legacy
// server (and, for the protected request, a second school forwarding only
// the signed identity assertion), plain reverse_proxy to the same server
// with the same transport settings, and plain reverse_proxy to the no-op
// MCP server.
// Targets that are compared run interleaved (A B A B ...) for several
// rounds; the medians and their ratios are printed, with the Caddy
// process's CPU time per request. See BENCHMARKS.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

type config struct {
	rounds      int
	duration    time.Duration
	concurrency int
	courses     int
	exchanges   int
	grants      int
	smoke       bool
	profile     string
	profileFor  time.Duration
	only        string
	build       string
	ab          string
	// abGlobal are global options for -ab's older build's Caddy.
	abGlobal string
	peers    bool
	// dpopAlg is the algorithm of the bench client's DPoP key (dpop.go).
	dpopAlg string
}

func main() {
	serve := flag.String("serve", "", "internal: run as the bench's 'upstream' or 'noop-mcp' server on -addr, or as -noisy's victim 'load' (a JSON spec on stdin)")
	addr := flag.String("addr", "", "internal: listen address of -serve")
	assertionIssuer := flag.String("assertion-issuer", "", "internal: with -serve upstream, the school whose requests must carry its verified X-School-Assertion")
	cfg := config{}
	flag.IntVar(&cfg.rounds, "rounds", 5, "rounds of each compared pair (A B A B ...)")
	flag.DurationVar(&cfg.duration, "duration", 4*time.Second, "length of one target's run in a round")
	flag.IntVar(&cfg.concurrency, "c", 64, "concurrent clients")
	flag.IntVar(&cfg.courses, "courses", 10000, "courses in the generated catalog")
	flag.IntVar(&cfg.exchanges, "exchanges", 20000, "authorization codes exchanged per token round")
	flag.IntVar(&cfg.grants, "grants", 100000, "live grants in the store for the memory and start-up figures")
	flag.StringVar(&cfg.dpopAlg, "dpop-alg", "ES256", "the algorithm of the DPoP key of the protected and token scenarios' DPoP targets (ES256, EdDSA, RS256, PS256, ...)")
	flag.StringVar(&cfg.only, "only", "", "run only these scenarios (comma-separated: protected,mcp,discovery,token,store,memory, and the peers forward_auth,oidc-provider,hydra; store and hydra start their own PostgreSQL)")
	flag.StringVar(&cfg.build, "build", "", "measure Caddy built from this commit instead of the working tree (an older build through today's harness)")
	flag.StringVar(&cfg.abGlobal, "ab-global", "", "with -ab: global options for the older build's Caddy, e.g. 'schoolgate { fair_share off }' with -ab HEAD for what fair share costs")
	flag.StringVar(&cfg.ab, "ab", "", "also run Caddy built from this commit, beside this tree's, interleaved, through the token, protected and discovery scenarios (an A/B)")
	flag.BoolVar(&cfg.peers, "peers", false, "measure the peers beside the gateway instead: forward_auth → oauth2-proxy on the protected request, node-oidc-provider and Ory Hydra (on PostgreSQL, beside the gateway's postgres store) at the token endpoint (scenarios forward_auth, oidc-provider, hydra), with each server process's CPU per operation")
	flag.BoolVar(&cfg.smoke, "smoke", false, "tiny sizes and durations: checks the harness, not the gateway")
	schools := flag.String("schools", "", "measure many schools in one Caddy instead: comma-separated sizes, e.g. 100,500,1000")
	platform := flag.Int("platform", 0, "measure the school_platform handler instead, with this many schools in its registry (e.g. 10000)")
	registries := flag.String("registries", "dir,postgres", "with -platform or -noisy: the registries measured (dir, postgres; postgres starts its own PostgreSQL)")
	maxActive := flag.Int("max-active", 1000, "with -platform: the platform's max_active")
	platformSteps := flag.String("platform-steps", "", "with -platform: only these measures after the start (comma-separated: ratio,every,cold,changes,churn,burst); empty: all")
	flag.StringVar(&cfg.profile, "profile", "", "write CPU profiles of Caddy during the first round of the scenario whose name starts with this, to bench-<scenario>-<target>.pprof (-ab's two Caddies to bench-<scenario>-ab-<target>.pprof, with their admin endpoints on; with -noisy: noisy, the first flooded phase of each flood, and its trace)")
	flag.DurationVar(&cfg.profileFor, "profile-for", 2*time.Second, "with -profile token: how long each of the exchange's and the refresh's profiles lasts (the round must last as long: raise -exchanges)")
	flag.Parse()
	if cfg.peers && cfg.only == "" {
		cfg.only = scenarioForwardAuth + "," + scenarioOIDCProvider + "," + scenarioHydra
	}

	var err error
	switch *serve {
	case "upstream":
		err = serveUpstream(*addr, cfg.courses, *assertionIssuer, *accountDelayF)
	case "noop-mcp":
		err = serveNoopMCP(*addr)
	case "load":
		err = serveLoad(os.Stdin, os.Stdout)
	case "":
		if *soakFor > 0 {
			err = runSoak(soakSizes(*soakFor))
			break
		}
		if *noisyFlag {
			var nc noisyConfig
			if nc, err = noisySizes(cfg, *registries); err == nil {
				err = runNoisy(nc)
			}
			break
		}
		if *platform > 0 {
			pc := platformSizes(cfg, *platform, *maxActive, *registries)
			if *platformSteps != "" {
				pc.steps = strings.Split(*platformSteps, ",")
			}
			err = runPlatform(pc)
			break
		}
		if *schools != "" {
			err = runSchoolSizes(*schools)
			break
		}
		if cfg.smoke {
			cfg.rounds, cfg.duration, cfg.courses, cfg.exchanges, cfg.grants = 1, 300*time.Millisecond, 500, 300, 0
		}
		err = run(cfg)
	default:
		err = fmt.Errorf("unknown -serve %q", *serve)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// platformSizes are the platform scenario's sizes: the flags', or with
// -smoke tiny ones (at most 50 schools, max_active 10, 1.5 s of churn).
func platformSizes(cfg config, schools, maxActive int, registries string) platformConfig {
	pc := platformConfig{schools: schools, maxActive: maxActive, concurrency: cfg.concurrency, rounds: cfg.rounds,
		samples: 10, duration: cfg.duration, churn: 10 * time.Second, settle: 5 * time.Second, visible: 2 * time.Second,
		registries: strings.Split(registries, ","), profile: cfg.profile}
	if cfg.smoke {
		pc.schools, pc.maxActive, pc.concurrency, pc.rounds, pc.samples = min(schools, 50), 10, 8, 1, 2
		pc.duration, pc.churn, pc.settle, pc.visible = 300*time.Millisecond, 1500*time.Millisecond, 200*time.Millisecond, 500*time.Millisecond
	}
	return pc
}
