package metrics

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schoolgate/schoolgate/store"
)

// series are a registry's schoolgate_ series by name and labels, written
// name{label=value,...}: site first, the others in their names' order.
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "schoolgate_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "site" {
					labels = append([]string{"site=" + l.GetValue()}, labels...)
				} else {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}

// sitesOf are the schools that have series, and the count of series
// without a school's label.
func sitesOf(all map[string]float64) (sites map[string]bool, totals int) {
	sites = map[string]bool{}
	for k := range all {
		_, labels, _ := strings.Cut(k, "{")
		if site, ok := strings.CutPrefix(labels, "site="); ok {
			site, _, _ = strings.Cut(site, ",")
			sites[strings.TrimSuffix(site, "}")] = true
		} else {
			totals++
		}
	}
	return sites, totals
}

// observedEvents is what observeSchools has school i count, token
// validations aside: its traffic.
func observedEvents(i int) int {
	n := 1 + i%97 + 2 + 2
	if i%10 == 0 {
		n += 2
	}
	return n
}

// The instance's totals are a fixed number of series however many schools
// count; metrics_per_school none shows no school, all every one, and top
// n the n busiest.
func TestMetricsPerSchool(t *testing.T) {
	const schools = 3000
	busiest := make([]int, schools)
	for i := range busiest {
		busiest[i] = i
	}
	slices.SortFunc(busiest, func(a, b int) int {
		if c := cmp.Compare(observedEvents(b), observedEvents(a)); c != 0 {
			return c
		}
		return cmp.Compare(fmt.Sprintf("https://s%d.example", a), fmt.Sprintf("https://s%d.example", b))
	})
	totalsOf := func(n int) int {
		reg := prometheus.NewPedanticRegistry()
		m := For(reg)
		m.SetPerSchool(PerSchool{mode: PerSchoolNone})
		observeSchools(m, n)
		_, totals := sitesOf(series(t, reg))
		return totals
	}
	few := totalsOf(10)
	for _, tt := range []struct {
		per  PerSchool
		want []int // the schools with series, by index
	}{
		{PerSchool{mode: PerSchoolNone}, nil},
		{PerSchool{mode: PerSchoolTop, top: 20}, busiest[:20]},
		{PerSchool{mode: PerSchoolTop, top: schools + 5}, busiest},
		{PerSchool{mode: PerSchoolAll}, busiest},
	} {
		t.Run(fmt.Sprintf("%s %d", tt.per.mode, tt.per.top), func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m := For(reg)
			m.SetPerSchool(tt.per)
			observeSchools(m, schools)
			all := series(t, reg)
			sites, totals := sitesOf(all)
			if totals != few {
				t.Errorf("%d series of totals with %d schools, %d with 10", totals, schools, few)
			}
			want := map[string]bool{}
			for _, i := range tt.want {
				want[fmt.Sprintf("https://s%d.example", i)] = true
			}
			if !maps.Equal(sites, want) {
				t.Errorf("%d schools have series, want %d (the busiest)", len(sites), len(want))
			}
			allowed := 0
			for i := range schools {
				allowed += 1 + i%97
			}
			if got := all["schoolgate_protected_requests_total{outcome=allowed}"]; got != float64(allowed) {
				t.Errorf("the total of allowed requests: %v, want %d", got, allowed)
			}
		})
	}
}

// A top ranks by recent traffic: a school in it keeps its place until
// another's traffic is a quarter more, a school that leaves it has no
// series from the next scrape on, and traffic long past weighs little.
func TestMetricsTopFollowsTraffic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := For(reg)
	m.SetPerSchool(PerSchool{mode: PerSchoolTop, top: 2})
	obs := map[string]Observer{}
	count := func(name string, n int) {
		if _, ok := obs[name]; !ok {
			obs[name] = NewObserver(m, "https://"+name+".example")
		}
		for range n {
			obs[name].ProtectedOutcome("allowed")
		}
	}
	top := func(now time.Time) []string {
		var out []string
		for _, sc := range m.chosen(now) {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(sc.site, "https://"), ".example"))
		}
		slices.Sort(out)
		return out
	}
	t0 := time.Now()
	count("a", 100)
	count("b", 50)
	count("c", 10)
	if got := top(t0); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("top 2: %v, want a b", got)
	}
	count("c", 45) // 55 against b's 50: not a quarter more
	if got := top(t0); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("c, a little busier than b, took its place: %v", got)
	}
	count("c", 10) // 65: more than a quarter more
	if got := top(t0); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("c, a quarter busier than b: %v, want a c", got)
	}
	if sites, _ := sitesOf(series(t, reg)); !maps.Equal(sites, map[string]bool{"https://a.example": true, "https://c.example": true}) {
		t.Errorf("the series after b left the top: %v", sites)
	}
	// Two hours on, b's 5 new requests outweigh a's 100 of then.
	count("b", 5)
	if got := top(t0.Add(2 * time.Hour)); !slices.Contains(got, "b") {
		t.Errorf("b, the one busy now, is not in the top: %v", got)
	}
}

// Each event is counted once in the instance's totals and once in its
// school's series, under the labels it was given; a value outside a
// label's known ones is counted as "other", so that no label takes a
// value from a request.
func TestMetricsCountedOnce(t *testing.T) {
	const site = "https://s.example"
	type event struct {
		name  string
		count func(Observer)
		want  string // the total's series
	}
	var events []event
	for _, cause := range []store.Cause{store.CauseFairShare, store.CauseBudgetRequests, store.CauseBudgetMCPAnonymous,
		store.CauseMCPAnonymousAddress, store.CauseLegacyBusy, store.CauseLegacyTimeout} {
		events = append(events, event{"refused " + cause.String(), func(o Observer) { o.Refusal(cause) },
			"schoolgate_requests_refused_total{cause=" + cause.String() + "}"})
	}
	events = append(events,
		event{"unknown cause", func(o Observer) { o.Refusal(store.NumCauses + 3) },
			"schoolgate_requests_refused_total{cause=other}"},
		event{"token", func(o Observer) { o.TokenIssued("refresh_token") },
			"schoolgate_tokens_issued_total{grant_type=refresh_token}"},
		event{"oauth refusal", func(o Observer) { o.Refused("token", "rate_limited") },
			"schoolgate_oauth_refused_total{endpoint=token,reason=rate_limited}"},
		event{"unknown oauth refusal", func(o Observer) { o.Refused("/evil", "<script>") },
			"schoolgate_oauth_refused_total{endpoint=other,reason=other}"},
		event{"registration", func(o Observer) { o.Registered("loopback") },
			"schoolgate_registrations_total{kind=loopback}"},
		event{"lookup", func(o Observer) { o.TokenLookup(false) }, "schoolgate_token_lookups_total{result=miss}"},
		event{"disconnect", func(o Observer) { o.GrantDisconnected("client") },
			"schoolgate_grants_disconnected_total{by=client}"},
		event{"protected", func(o Observer) { o.ProtectedOutcome("insufficient_scope") },
			"schoolgate_protected_requests_total{outcome=insufficient_scope}"},
		event{"unknown outcome", func(o Observer) { o.ProtectedOutcome("x") },
			"schoolgate_protected_requests_total{outcome=other}"},
		event{"mcp", func(o Observer) { o.MCPCaller("refused") }, "schoolgate_mcp_requests_total{caller=refused}"},
	)
	for _, ev := range events {
		t.Run(ev.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m := For(reg)
			m.SetPerSchool(PerSchool{mode: PerSchoolAll})
			ev.count(NewObserver(m, site))
			name, labels, _ := strings.Cut(ev.want, "{")
			schoolSeries := "schoolgate_school_" + strings.TrimPrefix(name, "schoolgate_") + "{site=" + site + "," + labels
			for k, v := range series(t, reg) {
				switch {
				case k == ev.want || k == schoolSeries:
					if v != 1 {
						t.Errorf("%s = %v, want 1", k, v)
					}
				case v != 0:
					t.Errorf("%s = %v: counted besides %s", k, v, ev.want)
				}
			}
		})
	}
}

// Every error code the authorization server and the resource check answer
// with is a known value of its label, not "other": a code added without
// its place here would be counted out of sight.
func TestMetricsKnowEveryCode(t *testing.T) {
	reasons := families[famRefused].values[1]
	outcomes := families[famProtected].values[0]
	found := 0
	for _, dir := range []string{"../authserver", "../policy", "../school"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for file, f := range pkg.Files {
				if strings.HasSuffix(file, "_test.go") {
					continue
				}
				ast.Inspect(f, func(n ast.Node) bool {
					kv, ok := n.(*ast.KeyValueExpr)
					if !ok {
						return true
					}
					key, ok := kv.Key.(*ast.Ident)
					lit, isLit := kv.Value.(*ast.BasicLit)
					if !ok || !isLit || lit.Kind != token.STRING {
						return true
					}
					code, _ := strconv.Unquote(lit.Value)
					switch {
					case key.Name == "Code" && pkg.Name == "authserver": // oauthError
						found++
						if !slices.Contains(reasons, code) {
							t.Errorf("%s: the OAuth error %q is not a value of oauth_refused_total's reason", fset.Position(lit.Pos()), code)
						}
					case key.Name == "Error" && pkg.Name != "authserver": // policy.Challenge
						found++
						if !slices.Contains(outcomes, code) {
							t.Errorf("%s: the challenge %q is not a value of protected_requests_total's outcome", fset.Position(lit.Pos()), code)
						}
					}
					return true
				})
			}
		}
	}
	if found < 10 {
		t.Fatalf("found %d error codes in the sources: the scan no longer finds them", found)
	}
}

// metrics_per_school's default is every school for site blocks only and
// none beside a platform; a top above the site blocks' count is refused,
// naming the option, and a platform's is not (its count changes).
func TestMetricsPerSchoolOption(t *testing.T) {
	for _, tt := range []struct {
		option   string
		gateways int
		platform bool
		want     PerSchool
		err      string
	}{
		{"", 3, false, PerSchool{mode: PerSchoolAll}, ""},
		{"", 0, true, PerSchool{mode: PerSchoolNone}, ""},
		{"", 3, true, PerSchool{mode: PerSchoolNone}, ""},
		{"all", 0, true, PerSchool{mode: PerSchoolAll}, ""},
		{"top 3", 3, false, PerSchool{mode: PerSchoolTop, top: 3}, ""},
		{"top 4", 3, false, PerSchool{}, "metrics_per_school: top 4 is more than the 3 schools of this config"},
		{"top 500", 3, true, PerSchool{mode: PerSchoolTop, top: 500}, ""},
		{"some", 3, false, PerSchool{}, `metrics_per_school: "some" is not none, all or top <n>`},
	} {
		got, err := PerSchoolOf(tt.option, tt.gateways, tt.platform)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q, %d site blocks, platform %v: %v, want %s", tt.option, tt.gateways, tt.platform, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%q, %d site blocks, platform %v: %+v %v, want %+v", tt.option, tt.gateways, tt.platform, got, err, tt.want)
		}
	}
}

// For hands a registry's later callers the Metrics registered by its
// first without registering again (a lookup), and lets go of its entry
// once the registry is gone.
func TestForLooksUp(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := For(reg)
	if got := testing.AllocsPerRun(100, func() { _ = For(reg) }); got != 0 {
		t.Errorf("For of a registry already registered: %v allocations, want a lookup (none)", got)
	}
	if For(reg) != m {
		t.Error("For of the same registry handed other Metrics")
	}
	if other := For(prometheus.NewPedanticRegistry()); other == m {
		t.Error("For of another registry handed the first's Metrics")
	}
	entries := func() int {
		n := 0
		registered.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := entries()
	reg = nil
	for range 10 {
		runtime.GC()
		if entries() < before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d entries after the registries went, want fewer than %d", entries(), before)
}
