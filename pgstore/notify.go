package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/schoolgate/schoolgate/store"
)

// notifyChannel is the one channel every site's changes are announced on;
// a payload names the site, so a process listens once for all its sites.
const notifyChannel = "schoolgate"

// A notification's payload is "<site id>:<store.Change>:<version>",
// all decimal: the site's version after the change, so that the poll
// (listen.go) knows the listener has seen it.

// noticePrefix is the payload's part that the announcing Go code knows;
// the database appends the version it assigned.
func noticePrefix(siteID int64, c store.Change) string {
	return strconv.FormatInt(siteID, 10) + ":" + strconv.Itoa(int(c)) + ":"
}

// parseNotice reads a payload that announce sent.
func parseNotice(payload string) (siteID int64, c store.Change, version int64, err error) {
	parts := strings.Split(payload, ":")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("pgstore: notification %q is not <site>:<change>:<version>", payload)
	}
	if siteID, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("pgstore: notification %q: bad site: %w", payload, err)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < int(store.ChangeTokens) || n > int(store.ChangeAll) {
		return 0, 0, 0, fmt.Errorf("pgstore: notification %q: unknown change", payload)
	}
	if version, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("pgstore: notification %q: bad version: %w", payload, err)
	}
	return siteID, store.Change(n), version, nil
}

// announce tells the site's other instances, in the transaction that
// makes the change, that what they cache of c is stale: the notification
// is delivered on commit and never for a rollback. The version bump lets
// an instance that missed notifications (a dropped connection) notice
// that it did.
func (s *Site) announce(ctx context.Context, q querier, c store.Change) error {
	_, err := q.Exec(ctx, `WITH v AS (UPDATE sites SET version = version + 1 WHERE id = $1 RETURNING version)
		SELECT pg_notify($2::text, $3::text || v.version::text) FROM v`, s.id, notifyChannel, noticePrefix(s.id, c))
	return err
}

// announceIf announces c when n rows changed: a revocation of what was
// already revoked is no news.
func (s *Site) announceIf(ctx context.Context, q querier, n int64, c store.Change) error {
	if n == 0 {
		return nil
	}
	return s.announce(ctx, q, c)
}
