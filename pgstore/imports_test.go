package pgstore

import (
	osexec "os/exec"
	"strings"
	"testing"
)

// TestImports: pgstore is a backend. Of the project's packages it may
// import the contracts it implements (store, registry) and policy (with
// sitepath, which policy imports), never the protocol or the adapter.
func TestImports(t *testing.T) {
	out, err := osexec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/schoolgate/schoolgate/"
	allowed := map[string]bool{"pgstore": true, "store": true, "registry": true, "policy": true, "sitepath": true}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		if pkg, ours := strings.CutPrefix(dep, module); ours && !allowed[pkg] {
			t.Errorf("pgstore depends on %s", dep)
		}
	}
}
