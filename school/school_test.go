package school

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A store whose keys do not read is the school's data failing, which New
// tells from a configuration error.
func TestNewBuildError(t *testing.T) {
	st := openStore(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), testConfig(st))
	var de *BuildError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), testIssuer) {
		t.Fatalf("a closed store: %v, want a *BuildError naming the school", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*Config)
	}{
		{"no issuer", func(c *Config) { c.Issuer = "" }},
		{"no upstream", func(c *Config) { c.Upstream = "" }},
		{"no session URL", func(c *Config) { c.SessionURL = "" }},
		{"no admin prefix", func(c *Config) { c.AdminPrefix = "" }},
		{"no store", func(c *Config) { c.Store = nil }},
		{"no scheduler", func(c *Config) { c.Scheduler = nil }},
	} {
		cfg := testConfig(openStore(t))
		tt.edit(&cfg)
		if _, err := New(context.Background(), cfg); err == nil || errors.As(err, &de) {
			t.Errorf("%s: %v, want a configuration error", tt.name, err)
		}
	}
}
