package pgstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

func TestNoticeRoundTrip(t *testing.T) {
	for _, c := range []store.Change{store.ChangeTokens, store.ChangeKeys,
		store.ChangeSettings, store.ChangeCatalog, store.ChangeAll} {
		id, got, version, err := parseNotice(noticePrefix(42, c) + "7")
		if err != nil || id != 42 || got != c || version != 7 {
			t.Errorf("parseNotice(%q) = %d, %d, %d, %v", noticePrefix(42, c)+"7", id, got, version, err)
		}
	}
	for _, bad := range []string{"", "42", "42:1", "x:1:1", "42:x:1", "42:0:1", "42:99:1", "42:1:x", "42:1:2:3"} {
		if _, _, _, err := parseNotice(bad); err == nil {
			t.Errorf("parseNotice(%q) succeeded", bad)
		}
	}
}

// TestAnnouncements: every change that instances cache is announced once
// it commits, with the site's version bumped; a change that changes
// nothing is not.
func TestAnnouncements(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	if err := s.PutClient(ctx, &store.Client{ID: "app-1", Kind: store.KindApp}); err != nil {
		t.Fatal(err)
	}
	issue(t, s, "code", "grant-1", "tok")
	listener := listen(t, dsn)
	k, _ := newKey(t, "k1", epoch)
	k2, _ := newKey(t, "k2", epoch.Add(time.Hour))
	for _, c := range []struct {
		name string
		call func() error
		want store.Change // 0: no announcement
	}{
		{"RevokeGrant", func() error { return s.RevokeGrant(ctx, "grant-1") }, store.ChangeTokens},
		{"RevokeGrant again", func() error { return s.RevokeGrant(ctx, "grant-1") }, 0},
		{"InitKeys", func() error { _, err := s.InitKeys(ctx, k); return err }, store.ChangeKeys},
		{"InitKeys again", func() error { _, err := s.InitKeys(ctx, k2); return err }, 0},
		{"RotateKey", func() error { return s.RotateKey(ctx, k2) }, store.ChangeKeys},
		{"PutSetting", func() error { return s.PutSetting(ctx, "a", []byte("1")) }, store.ChangeSettings},
		{"InitSetting", func() error { _, err := s.InitSetting(ctx, "b", []byte("1")); return err }, store.ChangeSettings},
		{"InitSetting again", func() error { _, err := s.InitSetting(ctx, "b", []byte("2")); return err }, 0},
		{"SaveCatalog", func() error { return s.SaveCatalog(ctx, []byte("{}")) }, store.ChangeCatalog},
		{"SaveCatalog unchanged", func() error { return s.SaveCatalog(ctx, []byte("{}")) }, 0},
		{"DeleteClient", func() error { _, err := s.DeleteClient(ctx, "app-1"); return err }, store.ChangeTokens},
	} {
		before := count(t, dsn, `SELECT version FROM sites WHERE id = $1`, s.id)
		if err := c.call(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := listener.next(t)
		after := count(t, dsn, `SELECT version FROM sites WHERE id = $1`, s.id)
		switch {
		case c.want == 0 && got != "":
			t.Errorf("%s announced %q", c.name, got)
		case c.want == 0 && after != before:
			t.Errorf("%s bumped the version", c.name)
		case c.want != 0 && got != noticePrefix(s.id, c.want)+strconv.Itoa(after):
			t.Errorf("%s announced %q, want change %d of site %d at version %d", c.name, got, c.want, s.id, after)
		case c.want != 0 && after != before+1:
			t.Errorf("%s: version %d → %d, want one bump", c.name, before, after)
		}
	}
}

type listener struct{ conn *pgx.Conn }

func listen(t *testing.T, dsn string) *listener {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		t.Fatal(err)
	}
	return &listener{conn}
}

// next returns the next notification's payload, or "" if none comes soon.
func (l *listener) next(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		if ctx.Err() == nil {
			t.Fatal(err)
		}
		return ""
	}
	return n.Payload
}

// FuzzParseNotice: any payload on the channel (another build, a person
// with psql) is read or refused, never a panic, and what is read writes
// back the same.
func FuzzParseNotice(f *testing.F) {
	f.Add("1:1:1")
	f.Add("42:5:9000")
	f.Add("1:9:1")
	f.Add("::")
	f.Add("-1:1:-1")
	f.Fuzz(func(t *testing.T, payload string) {
		site, c, version, err := parseNotice(payload)
		if err != nil {
			return
		}
		again := noticePrefix(site, c) + strconv.FormatInt(version, 10)
		s2, c2, v2, err := parseNotice(again)
		if err != nil || s2 != site || c2 != c || v2 != version {
			t.Errorf("%q read as %d %d %d, written %q, read again %d %d %d %v", payload, site, c, version, again, s2, c2, v2, err)
		}
	})
}
