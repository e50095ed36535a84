package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jackc/pgx/v5"

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
	if !ok || p.IDToken == "" {
		t.Fatal("no token pair with an ID token")
	}
	kidsBefore := kids(t, gw.URL)
	verifyIDToken := func(when string) {
		t.Helper()
		keys := oidc.NewRemoteKeySet(ctx, gw.URL+"/.well-known/jwks.json")
		v := oidc.NewVerifier(gw.URL, keys, &oidc.Config{ClientID: "load-app", SupportedSigningAlgs: []string{oidc.ES256}})
		if _, err := v.Verify(ctx, p.IDToken); err != nil {
			t.Errorf("the ID token issued before the move, with the JWKS %s: %v", when, err)
		}
	}
	verifyIDToken("before the move")

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
	moved := dbDigest(t, dsn)
	if out, err := move(); err == nil || !strings.Contains(out, "already holds") {
		t.Fatalf("a second move into a school with data: %v\n%s", err, out)
	}
	if again := dbDigest(t, dsn); again != moved {
		t.Errorf("the refused second move changed the database:\nbefore %s\nafter  %s", moved, again)
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
	verifyIDToken("after the move")
	if _, err := os.Stat(filepath.Join(data, "school.db")); err != nil {
		t.Errorf("the bbolt file: %v", err)
	}
}

// dbDigest sums up every row of every table in the database at dsn, per
// table (row count and a hash of the rows), to tell whether anything in it
// changed.
func dbDigest(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')
		ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var schema, name string
		err := r.Scan(&schema, &name)
		return pgx.Identifier{schema, name}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Fatal("the database has no tables")
	}
	var sum strings.Builder
	for _, tbl := range tables {
		var n int
		var hash string
		q := `SELECT count(*), coalesce(md5(string_agg(t::text, E'\n' ORDER BY t::text)), '') FROM ` + tbl.Sanitize() + ` t`
		if err := conn.QueryRow(ctx, q).Scan(&n, &hash); err != nil {
			t.Fatal(err)
		}
		sum.WriteString(strings.Join(tbl, ".") + "=" + strconv.Itoa(n) + ":" + hash + " ")
	}
	return sum.String()
}
