package admission

import (
	"os/exec"
	"strings"
	"testing"
)

// The gate is plain Go: school asks it and caddymodule owns it, so it
// depends on nothing of the gateway's or Caddy's.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		if strings.Contains(dep, "caddyserver") || strings.HasPrefix(dep, "github.com/schoolgate/schoolgate/") && dep != "github.com/schoolgate/schoolgate/admission" {
			t.Errorf("admission depends on %s", dep)
		}
	}
}
