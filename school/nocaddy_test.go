package school

import (
	"os/exec"
	"strings"
	"testing"
)

// The school is built from plain configuration, many times and on demand,
// so nothing of it may need Caddy: no package it depends on is Caddy's.
func TestNoCaddyDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.Contains(dep, "caddyserver") {
			t.Errorf("school depends on %s", strings.TrimSpace(dep))
		}
	}
}
