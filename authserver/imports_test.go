package authserver

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports holds authserver to the protocol: it draws no HTML page
// (html/template is package pages', which stands on this one) and stands
// on the store's contract, never on a backend.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/schoolgate/schoolgate/"
	allowed := map[string]bool{"authserver": true, "store": true, "policy": true, "sitepath": true, "i18n": true, "option": true}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		if pkg, ours := strings.CutPrefix(dep, module); ours && !allowed[pkg] || dep == "html/template" {
			t.Errorf("authserver depends on %s", dep)
		}
	}
}
