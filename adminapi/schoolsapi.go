package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// Schools answers the routes that write and read the platforms'
// registries (/schoolgate/schools). The adapter hands it the running
// platforms and registers its routes.
type Schools struct {
	// Platforms are the running platforms.
	Platforms func() []Platform
}

// Platform is a school_platform as the schools routes reach it.
type Platform interface {
	// Name names the registry: dir <path>, or postgres.
	Name() string
	// Registry is the registry once it was read, an error before.
	Registry() (registry.Registry, error)
	// Validate checks a record with the registry's own rules.
	Validate(rec *registry.Record) error
	// RetryAfter is, in seconds, when a registry not read (yet) is
	// read again.
	RetryAfter() int
	// Logger logs what a registry's failure says (hosts, paths), which
	// the answer does not.
	Logger() *slog.Logger
	// Served are the schools served now, by issuer; false before the
	// registry was read.
	Served() (iter.Seq2[string, ServedSchool], bool)
	// School is the school served now with the issuer, nil if none.
	School(issuer string) ServedSchool
}

// ServedSchool is a school of a platform's table.
type ServedSchool interface {
	// View is the school as the platform serves it now.
	View() SchoolView
}

// callTimeout bounds a registry's answer to an admin request.
const callTimeout = 5 * time.Second

// ErrNotConditional refuses if_version for a registry that cannot make a
// write conditional in the write itself: a check made here, then the
// write, would hold on this instance only, not between a platform's
// instances, which is what if_version promises.
var ErrNotConditional = errors.New("if_version: this registry cannot make a write conditional")

// maxRecordBody bounds a record written through the admin API.
const maxRecordBody = 1 << 20

// Schools answers /schoolgate/schools: GET lists the schools served (a
// page) or shows one as its registry has it, POST writes a record.
func (s Schools) Schools(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet:
		if issuer := r.URL.Query().Get("issuer"); issuer != "" {
			return s.show(w, r, issuer)
		}
		return s.list(w, r)
	case http.MethodPost:
		return s.put(w, r)
	}
	return Error{Status: http.StatusMethodNotAllowed, Err: errors.New("use GET or POST")}
}

// show answers one school as its registry has it now, with its
// configuration and its state here.
func (s Schools) show(w http.ResponseWriter, r *http.Request, issuer string) error {
	origin, err := schoolOrigin(issuer)
	if err != nil {
		return err
	}
	p, err := s.onePlatform(r.URL.Query().Get("platform"))
	if err != nil {
		return err
	}
	reg, err := p.Registry()
	if err != nil {
		return registryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	rec, err := reg.Get(ctx, origin)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return noSuchSchool(origin, p)
	case err != nil:
		return registryFailed(w, p, "reading "+origin, err)
	}
	return school.WriteJSON(w, http.StatusOK, viewOf(p, rec))
}

// put writes a record: checked first with the registry's own rules
// (400 naming the option), then, with if_version, against the stored
// version (409), then written (409 for a host another school has).
func (s Schools) put(w http.ResponseWriter, r *http.Request) error {
	var body SchoolWrite
	if err := decodeRecordPost(r, &body); err != nil {
		return err
	}
	p, err := s.onePlatform(body.Platform)
	if err != nil {
		return err
	}
	rec := registry.Record{Issuer: body.Issuer, Hosts: body.Hosts, Disabled: body.Disabled, Config: body.Config}
	if len(rec.Config) == 0 {
		return Error{Status: http.StatusBadRequest, Err: errors.New(`config: is required: the school_gateway options, {"upstream": "…", …}`)}
	}
	if err := rec.Check(); err != nil {
		return Error{Status: http.StatusBadRequest, Err: err}
	}
	if err := p.Validate(&rec); err != nil {
		return Error{Status: http.StatusBadRequest, Err: err}
	}
	reg, err := p.Registry()
	if err != nil {
		return registryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	stored, err := storedVersion(ctx, reg, rec.Issuer)
	if err != nil {
		return registryFailed(w, p, "reading "+rec.Issuer, err)
	}
	put, err := PutRecord(ctx, reg, rec, body.IfVersion)
	var taken *registry.HostTakenError
	switch {
	case errors.As(err, &taken):
		return Error{Status: http.StatusConflict, Err: err}
	case errors.Is(err, registry.ErrVersionChanged):
		return Error{Status: http.StatusConflict, Err: fmt.Errorf("if_version: %v", err)}
	case errors.Is(err, ErrNotConditional):
		return Error{Status: http.StatusNotImplemented, Err: err}
	case err != nil:
		return registryFailed(w, p, "writing "+rec.Issuer, err)
	}
	status := http.StatusOK
	if stored < 0 {
		status = http.StatusCreated
	}
	return school.WriteJSON(w, status, viewOf(p, put))
}

// Remove answers POST /schoolgate/schools/remove {"issuer"}: the record
// removed, its data kept.
func (s Schools) Remove(w http.ResponseWriter, r *http.Request) error {
	var body SchoolWrite
	if err := decodeRecordPost(r, &body); err != nil {
		return err
	}
	origin, err := schoolOrigin(body.Issuer)
	if err != nil {
		return err
	}
	p, err := s.onePlatform(body.Platform)
	if err != nil {
		return err
	}
	reg, err := p.Registry()
	if err != nil {
		return registryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	err = removeRecord(ctx, reg, origin, body.IfVersion)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return noSuchSchool(origin, p)
	case errors.Is(err, registry.ErrVersionChanged):
		return Error{Status: http.StatusConflict, Err: fmt.Errorf("if_version: %v", err)}
	case errors.Is(err, ErrNotConditional):
		return Error{Status: http.StatusNotImplemented, Err: err}
	case err != nil:
		return registryFailed(w, p, "removing "+origin, err)
	}
	return school.WriteJSON(w, http.StatusOK, map[string]any{"removed": origin})
}

// decodeRecordPost reads the JSON body of a write, refusing a field it
// does not know (a misspelt "host" would otherwise drop the aliases).
func decodeRecordPost(r *http.Request, v any) error {
	if r.Method != http.MethodPost {
		return Error{Status: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRecordBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Error{Status: http.StatusBadRequest, Err: fmt.Errorf("the body must be a JSON object of a school's record: %v", err)}
	}
	return nil
}

// schoolOrigin reads the issuer that names a school.
func schoolOrigin(issuer string) (string, error) {
	if issuer == "" {
		return "", Error{Status: http.StatusBadRequest, Err: errors.New(`name the school: "issuer": "<the school's origin>"`)}
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return "", Error{Status: http.StatusBadRequest, Err: fmt.Errorf("issuer: %v", err)}
	}
	return origin, nil
}

// PutRecord writes rec, on condition of its stored version when version
// is set: in the registry's write itself (registry.Conditional), so that
// the condition holds across instances.
func PutRecord(ctx context.Context, reg registry.Registry, rec registry.Record, version *int64) (registry.Record, error) {
	if version == nil {
		return reg.Put(ctx, rec)
	}
	c, ok := reg.(registry.Conditional)
	if !ok {
		return registry.Record{}, ErrNotConditional
	}
	return c.PutIf(ctx, rec, *version)
}

// removeRecord removes the record of issuer, on condition of its stored
// version when version is set, as PutRecord writes.
func removeRecord(ctx context.Context, reg registry.Registry, issuer string, version *int64) error {
	if version == nil {
		return reg.Remove(ctx, issuer)
	}
	c, ok := reg.(registry.Conditional)
	if !ok {
		return ErrNotConditional
	}
	return c.RemoveIf(ctx, issuer, *version)
}

// storedVersion is the stored record's version, -1 when there is none (a
// file written by hand may have version 0).
func storedVersion(ctx context.Context, reg registry.Registry, issuer string) (int64, error) {
	rec, err := reg.Get(ctx, issuer)
	if errors.Is(err, registry.ErrNotFound) {
		return -1, nil
	}
	return rec.Version, err
}

func noSuchSchool(issuer string, p Platform) error {
	return Error{Status: http.StatusNotFound,
		Err: fmt.Errorf("no school with issuer %s in the registry %s", issuer, p.Name())}
}

// platformsNamed are the running platforms, or the one selector names.
func (s Schools) platformsNamed(selector string) ([]Platform, error) {
	all := s.Platforms()
	if len(all) == 0 {
		return nil, Error{Status: http.StatusNotFound, Err: errors.New("no school_platform is configured")}
	}
	if selector == "" {
		return all, nil
	}
	var named []Platform
	for _, p := range all {
		if p.Name() == selector {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		return nil, Error{Status: http.StatusNotFound,
			Err: fmt.Errorf("platform: no platform is %q; the platforms are: %s", selector, describePlatforms(all))}
	}
	return named, nil
}

// onePlatform is the platform a request about one school is for: the
// only one, or the one its selector names. With several platforms the
// request must say which: a school's issuer may be free in each.
func (s Schools) onePlatform(selector string) (Platform, error) {
	ps, err := s.platformsNamed(selector)
	if err != nil {
		return nil, err
	}
	if len(ps) > 1 {
		what := "this config runs several platforms"
		if selector != "" {
			what = fmt.Sprintf("%q names several platforms (registries postgres are told apart by nothing else)", selector)
		}
		return nil, Error{Status: http.StatusBadRequest,
			Err: fmt.Errorf(`platform: %s: name one with "platform": %s`, what, describePlatforms(ps))}
	}
	return ps[0], nil
}

func describePlatforms(ps []Platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%q", p.Name())
	}
	return strings.Join(names, ", ")
}

// registryDown answers 503 for a platform whose registry was not read
// (yet): Retry-After is its next try.
func registryDown(w http.ResponseWriter, p Platform) error {
	return school.WriteTemporarilyUnavailable(w, p.RetryAfter(),
		"the registry "+p.Name()+" cannot be read now; try again shortly")
}

// registryFailed answers 503 for a registry that did not answer; its
// message, which may name hosts and paths, is logged.
func registryFailed(w http.ResponseWriter, p Platform, what string, err error) error {
	p.Logger().Error("the registry failed: "+what, "registry", p.Name(), "error", err)
	return school.WriteTemporarilyUnavailable(w, 5,
		what+" failed: the registry "+p.Name()+" did not answer; try again shortly")
}

// viewOf is a record read from the registry with its state here, which
// is pending while the platform has not applied this version of it.
func viewOf(p Platform, rec registry.Record) SchoolView {
	v := SchoolView{Issuer: rec.Issuer, Hosts: rec.Hosts, Disabled: rec.Disabled, Version: rec.Version,
		UpdatedAt: rec.UpdatedAt, Platform: p.Name(), State: "pending"}
	if e := p.School(rec.Issuer); e != nil {
		if served := e.View(); served.Version == rec.Version {
			v = served
		}
	}
	v.Config = rec.Config
	if v.Hosts == nil {
		v.Hosts = []string{}
	}
	return v
}
