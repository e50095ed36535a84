package sitedocs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the documents are rendered from what their caller gives
// them (Site, the catalog), never from the authorization server, whose
// tables the school hands in as data.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		if dep = strings.TrimSpace(dep); strings.HasSuffix(dep, "/schoolgate/authserver") {
			t.Errorf("sitedocs depends on %s", dep)
		}
	}
}
