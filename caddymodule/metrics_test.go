package caddymodule

import (
	"slices"
	"strings"
	"testing"
)

// A Caddyfile whose top names more schools than its site blocks is
// refused when it is loaded, naming the option; one within them loads.
func TestCaddyfileMetricsPerSchoolTop(t *testing.T) {
	const blocks = `
http://a.example {
	school_gateway http://127.0.0.1:9
}
http://b.example {
	school_gateway http://127.0.0.1:9
}
`
	option := func(v string) string { return "{\n\tschoolgate {\n\t\tmetrics_per_school " + v + "\n\t}\n}\n" }
	err := runCaddyfile(t, t.TempDir(), option("top 3")+blocks)
	if err == nil || !strings.Contains(err.Error(), "metrics_per_school: top 3 is more than the 2 schools of this config") {
		t.Fatalf("a top above the site blocks: %v", err)
	}
	if err := runCaddyfile(t, t.TempDir(), option("top 1")+blocks); err != nil {
		t.Fatal(err)
	}
	app, err := runningApp()
	if err != nil {
		t.Fatal(err)
	}
	for issuer, n := range map[string]int{"http://a.example": 1, "http://b.example": 2} {
		for range n {
			app.sites[issuer].observe.MCPCaller("anonymous")
		}
	}
	if got := metricSites(t); !slices.Equal(got, []string{"http://b.example"}) {
		t.Errorf("the schools with series: %v, want the busier one", got)
	}
}
