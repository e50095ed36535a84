package pgstore

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
)

// A site opens under its issuer's one spelling only, and a row an earlier
// version stored under another spelling of it fails the open, naming both,
// until the operator renames or deletes it; nothing is renamed for them.
func TestSiteSpellings(t *testing.T) {
	p := connect(t, pgcluster.Database(t))
	ctx := testContext(t)
	issuers := func() []string {
		t.Helper()
		rows, err := p.db.Query(ctx, `SELECT issuer FROM sites ORDER BY issuer`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := p.db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}

	for _, written := range []string{"https://School.Example", "https://school.example/", "https://school.example:443", "school.example"} {
		if _, err := p.Site(ctx, written, testSecret); err == nil {
			t.Errorf("%s: opened; only the issuer's one spelling names a site", written)
		}
	}
	if got := issuers(); len(got) != 0 {
		t.Fatalf("refused spellings made rows %q", got)
	}

	// What an earlier version stored for "issuer HTTPS://School.Example:443/",
	// and another school whose issuer starts alike.
	exec(`INSERT INTO sites (issuer) VALUES ('HTTPS://School.Example:443'), ('https://school.example.org')`)
	_, err := p.Site(ctx, testIssuer, testSecret)
	if err == nil || !strings.Contains(err.Error(), "HTTPS://School.Example:443") || !strings.Contains(err.Error(), "rename") ||
		strings.Contains(err.Error(), "school.example.org") {
		t.Fatalf("a row of another spelling: %v", err)
	}
	if got := issuers(); !slices.Equal(got, []string{"HTTPS://School.Example:443", "https://school.example.org"}) {
		t.Fatalf("the refused open changed the rows: %q", got)
	}
	if _, err := p.Site(ctx, "https://school.example.org", testSecret); err != nil {
		t.Fatalf("the other school: %v", err)
	}

	exec(`INSERT INTO sites (issuer) VALUES ($1)`, testIssuer)
	_, err = p.Site(ctx, testIssuer, testSecret)
	if err == nil || !strings.Contains(err.Error(), "each of "+testIssuer+", HTTPS://School.Example:443") {
		t.Fatalf("rows of both spellings: %v", err)
	}

	exec(`DELETE FROM sites WHERE issuer = 'HTTPS://School.Example:443'`)
	if _, err := p.Site(ctx, testIssuer, testSecret); err != nil {
		t.Fatalf("once the operator deleted the other row: %v", err)
	}

	// A host beyond ASCII is compared by its one spelling too.
	exec(`INSERT INTO sites (issuer) VALUES ('https://SCHÜLE.example')`)
	if _, err := p.Site(ctx, "https://schüle.example", testSecret); err == nil || !strings.Contains(err.Error(), "SCHÜLE") {
		t.Fatalf("a row of another spelling of a non-ASCII host: %v", err)
	}
}
