package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/storepool"
)

// An operator's reads of a school's store (the usage, the connection
// doctor, the audit trail, a person's export, the clients, the grants,
// the MCP connections switch) must not build a platform's idle school to
// read it:
// building one lets go of the least recently used school in use past
// max_active, and reading the figures of a thousand schools would build
// each in turn. A built school answers from its store and what it holds
// in memory; a platform's school that is not built is read from its store
// alone, without opening it as a school.

// schoolToRead finds the school with the issuer (in its one spelling) for
// such a read: a site block's school, or a platform's built one held
// until release (s); else a platform's school that is not built (idle,
// disabled or failed), e, whose store the caller reads alone. A site
// block's school that failed to load is a 503 with Retry-After (set on
// w), as for the other operations.
func schoolToRead(w http.ResponseWriter, issuer string) (s *site, e *platformSchool, release func(), err error) {
	app, err := runningApp()
	if err != nil {
		return nil, nil, nil, err
	}
	if s, ok := app.Site(issuer); ok {
		return s, nil, func() {}, nil
	}
	if f := app.failedSite(issuer); f != nil {
		return nil, nil, nil, unavailableSchool(w.Header(), f)
	}
	var unread *platform
	for _, p := range app.platformsNow() {
		t := p.tables.Load()
		if t == nil {
			unread = p
			continue
		}
		e := t.School(issuer)
		if e == nil {
			continue
		}
		if a := e.Active(); a != nil && a.Acquire() {
			return a.Built().site, nil, a.Release, nil
		}
		return nil, e, func() {}, nil
	}
	if unread != nil {
		return nil, nil, nil, unread.unreadRegistry(w, issuer)
	}
	return nil, nil, nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no school with issuer %s", issuer)}
}

// placed is the school's configuration with where its store is: a 409
// naming what could not be read when its record cannot be used.
func (e *platformSchool) placed(what string) (*Gateway, error) {
	b, err := e.prepare()
	if err != nil {
		return nil, caddy.APIError{HTTPStatus: http.StatusConflict,
			Err: fmt.Errorf("%s: its record cannot be used (%v), so where its %s is kept is not known", e.rec.Issuer, err, what)}
	}
	return b.g, nil
}

// storedDoctor is the connection doctor's report of clientID read from
// the school's store without opening it as a school: its database's
// rows, its bbolt file, or none for a school that never had one.
func (g *Gateway) storedDoctor(ctx context.Context, clientID, lang string) (*authserver.DoctorReport, error) {
	rows, release, err := g.readRows(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return authserver.StoredDoctor(ctx, rows, g.Vendors, clientID, lang)
}

// readRows opens the school's store for reading alone.
func (g *Gateway) readRows(ctx context.Context) (adminapi.StoredSource, func(), error) {
	if opts := g.Store.options(); opts != nil {
		rows, release, err := opts.readRows(ctx, g.Issuer)
		if err != nil {
			return nil, nil, err
		}
		src, ok := rows.(adminapi.StoredSource)
		if !ok {
			release()
			return nil, nil, fmt.Errorf("the store of %s cannot be read alone", g.Issuer)
		}
		return src, release, nil
	}
	path := g.dataPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return adminapi.NoRows{}, func() {}, nil
	}
	s, err := storepool.Bolt(path)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = storepool.ReleaseBolt(path) }, nil
}

// readerOf is adminapi's Read: a running school's reads, or a platform's
// school that is not built read from its store alone, as the doctor is.
// A store that cannot be opened fails the read with a 503, as a running
// school's that does not answer.
func readerOf(ctx context.Context, w http.ResponseWriter, issuer string) (adminapi.Reader, func(), error) {
	origin, err := adminOrigin(issuer)
	if err != nil {
		return nil, nil, err
	}
	s, e, release, err := schoolToRead(w, origin)
	if err != nil {
		return nil, nil, err
	}
	if s != nil {
		return adminapi.SiteReader{Site: s.Site}, release, nil
	}
	g, err := e.placed("store")
	if err != nil {
		return nil, nil, err
	}
	src, done, err := g.readRows(ctx)
	if err != nil {
		return adminapi.StoredReaderFailed(origin, err, e.p.ctx.Slogger()), func() {}, nil
	}
	return adminapi.NewStoredReader(origin, src, g.Vendors, e.p.ctx.Slogger()), done, nil
}
