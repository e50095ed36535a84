package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Offline, the bench falls back to the newest oauth2-proxy built before:
// newest by version, not by name (v7.9.0 sorts after v7.15.6 as text).
func TestNewestBuilt(t *testing.T) {
	for _, tc := range []struct {
		built []string
		want  string
	}{
		{nil, ""},
		{[]string{"v7.15.6"}, "v7.15.6"},
		{[]string{"v7.9.0", "v7.15.6", "v7.15.10"}, "v7.15.10"},
		{[]string{"v7.8.1", "v6.99.0"}, "v7.8.1"},
	} {
		cache := t.TempDir()
		for _, v := range tc.built {
			dir := filepath.Join(cache, "oauth2-proxy@"+v)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "oauth2-proxy"), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// A version directory without its binary (a build that failed) is no candidate.
		if err := os.MkdirAll(filepath.Join(cache, "oauth2-proxy@v9.0.0"), 0o755); err != nil {
			t.Fatal(err)
		}
		bin, v := newestBuilt(cache)
		if v != tc.want {
			t.Errorf("built %v: newest %q, want %q", tc.built, v, tc.want)
		}
		if tc.want != "" && bin != filepath.Join(cache, "oauth2-proxy@"+tc.want, "oauth2-proxy") {
			t.Errorf("built %v: binary %q", tc.built, bin)
		}
	}
}
