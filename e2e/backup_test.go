package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRestore: caddy schoolgate backup copies a serving school;
// restored (Caddy stopped, the copy put in place, Caddy started), the
// school honours every token issued before the backup and none issued
// after it.
func TestBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Caddy")
	}
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "site")
	redirect := "https://load-app.example/callback"
	extra := vendorBlock("Load App", "load-app", redirect, "member", loadScope) + "\t\trate_limit off\n"
	gw := startGateway(t, dir, siteBlock(port, sch.URL, data, extra))
	o := signInForLoad(t, gw.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()
	grant := func() tokenPair {
		t.Helper()
		code, verifier, r := o.authorize(ctx)
		if code == "" {
			t.Fatalf("authorize: %v", r)
		}
		p, ok := o.exchange(ctx, code, verifier).pair()
		if !ok {
			t.Fatal("no token pair")
		}
		return p
	}
	before := grant()
	copyFile := filepath.Join(dir, "backup.db")
	out, err := exec.Command(caddyBin, "schoolgate", "backup", gw.URL, copyFile, "--address", gw.AdminAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), copyFile) {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	after := grant()
	gw.kill()
	raw, err := os.ReadFile(copyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "school.db"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	gw.restart()
	status := func(token string) int {
		return o.request(ctx, http.MethodPost, "/account/graphql", token, viewerQuery, nil).status
	}
	if st := status(before.Access); st != http.StatusOK {
		t.Errorf("a token issued before the backup, after the restore: %d", st)
	}
	if st := status(after.Access); st != http.StatusUnauthorized {
		t.Errorf("a token issued after the backup, after the restore: %d", st)
	}
}
