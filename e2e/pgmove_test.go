package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// TestMoveSiteToPostgres moves a running school from its bbolt file to
// PostgreSQL with caddy schoolgate migrate-store: refused while Caddy
// holds the file, then done with Caddy stopped; the school, started on
// the database, keeps its tokens, refresh chain and key ids.
func TestMoveSiteToPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Caddy")
	}
	sch := startSchool(t)
	dsn := pgcluster.Database(t)
	port := freePort(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "site")
	redirect := "https://load-app.example/callback"
	extra := vendorBlock("Load App", "load-app", redirect, "member", loadScope) + "\t\trate_limit off\n"
	gw := startGateway(t, dir, siteBlock(port, sch.URL, data, extra))
	o := signInForLoad(t, gw.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()
	code, verifier, r := o.authorize(ctx)
	if code == "" {
		t.Fatalf("authorize: %v", r)
	}
	p, ok := o.exchange(ctx, code, verifier).pair()
	if !ok {
		t.Fatal("no token pair")
	}
	kidsBefore := kids(t, gw.URL)

	move := func() (string, error) {
		cmd := exec.Command(caddyBin, "schoolgate", "migrate-store", "--data", data, "--issuer", gw.URL, "--dsn", dsn)
		cmd.Env = append(os.Environ(), "SCHOOLGATE_KEY_SECRET="+pgKeySecret)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := move(); err == nil || !strings.Contains(out, "stop Caddy first") {
		t.Fatalf("a move while Caddy runs: %v\n%s", err, out)
	}
	gw.kill()
	out, err := move()
	if err != nil || !strings.Contains(out, "tokens=2") || !strings.Contains(out, "in the database for") {
		t.Fatalf("the move: %v\n%s", err, out)
	}
	if out, err := move(); err == nil {
		t.Fatalf("a second move into a school with data succeeded:\n%s", out)
	}

	gw.write(pgSiteBlock(port, port, sch.URL, dsn, extra))
	gw.run()
	if r := o.request(ctx, http.MethodPost, "/account/graphql", p.Access, viewerQuery, nil); r.status != http.StatusOK {
		t.Errorf("an access token issued before the move: %v", r)
	}
	if _, ok := o.refresh(ctx, p.Refresh).pair(); !ok {
		t.Error("a refresh token issued before the move does not refresh")
	}
	if after := kids(t, gw.URL); !slices.Equal(after, kidsBefore) {
		t.Errorf("key ids %v after the move, %v before", after, kidsBefore)
	}
	if _, err := os.Stat(filepath.Join(data, "school.db")); err != nil {
		t.Errorf("the bbolt file: %v", err)
	}
}
