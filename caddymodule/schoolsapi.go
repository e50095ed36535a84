package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/registry"
	"github.com/schoolgate/schoolgate/school"
)

// errNotConditional refuses if_version for a registry that cannot make a
// write conditional in the write itself: a check made here, then the
// write, would hold on this instance only, not between a platform's
// instances, which is what if_version promises.
var errNotConditional = errors.New("if_version: this registry cannot make a write conditional")

// maxRecordBody bounds a record written through the admin API.
const maxRecordBody = 1 << 20

func handleSchools(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet:
		if issuer := r.URL.Query().Get("issuer"); issuer != "" {
			return showSchool(w, r, issuer)
		}
		return listSchools(w, r)
	case http.MethodPost:
		return putSchool(w, r)
	}
	return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET or POST")}
}

// showSchool answers one school as its registry has it now, with its
// configuration and its state here.
func showSchool(w http.ResponseWriter, r *http.Request, issuer string) error {
	origin, err := schoolOrigin(issuer)
	if err != nil {
		return err
	}
	p, err := onePlatform(r.URL.Query().Get("platform"))
	if err != nil {
		return err
	}
	reg, err := p.writable()
	if err != nil {
		return writeRegistryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeCallTimeout)
	defer cancel()
	rec, err := reg.Get(ctx, origin)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return noSuchSchool(origin, p)
	case err != nil:
		return registryFailed(w, p, "reading "+origin, err)
	}
	return writeAdminJSON(w, http.StatusOK, p.viewOf(rec))
}

// putSchool writes a record: checked first with the registry's own rules
// (400 naming the option), then, with if_version, against the stored
// version (409), then written (409 for a host another school has).
func putSchool(w http.ResponseWriter, r *http.Request) error {
	var body adminapi.SchoolWrite
	if err := decodeRecordPost(r, &body); err != nil {
		return err
	}
	p, err := onePlatform(body.Platform)
	if err != nil {
		return err
	}
	rec := registry.Record{Issuer: body.Issuer, Hosts: body.Hosts, Disabled: body.Disabled, Config: body.Config}
	if len(rec.Config) == 0 {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(`config: is required: the school_gateway options, {"upstream": "…", …}`)}
	}
	if err := rec.Check(); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	if err := p.validator()(&rec); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	reg, err := p.writable()
	if err != nil {
		return writeRegistryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeCallTimeout)
	defer cancel()
	stored, err := storedVersion(ctx, reg, rec.Issuer)
	if err != nil {
		return registryFailed(w, p, "reading "+rec.Issuer, err)
	}
	put, err := putRecord(ctx, reg, rec, body.IfVersion)
	var taken *registry.HostTakenError
	switch {
	case errors.As(err, &taken):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: err}
	case errors.Is(err, registry.ErrVersionChanged):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: fmt.Errorf("if_version: %v", err)}
	case errors.Is(err, errNotConditional):
		return caddy.APIError{HTTPStatus: http.StatusNotImplemented, Err: err}
	case err != nil:
		return registryFailed(w, p, "writing "+rec.Issuer, err)
	}
	status := http.StatusOK
	if stored < 0 {
		status = http.StatusCreated
	}
	return writeAdminJSON(w, status, p.viewOf(put))
}

func handleSchoolRemove(w http.ResponseWriter, r *http.Request) error {
	var body adminapi.SchoolWrite
	if err := decodeRecordPost(r, &body); err != nil {
		return err
	}
	origin, err := schoolOrigin(body.Issuer)
	if err != nil {
		return err
	}
	p, err := onePlatform(body.Platform)
	if err != nil {
		return err
	}
	reg, err := p.writable()
	if err != nil {
		return writeRegistryDown(w, p)
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeCallTimeout)
	defer cancel()
	err = removeRecord(ctx, reg, origin, body.IfVersion)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return noSuchSchool(origin, p)
	case errors.Is(err, registry.ErrVersionChanged):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: fmt.Errorf("if_version: %v", err)}
	case errors.Is(err, errNotConditional):
		return caddy.APIError{HTTPStatus: http.StatusNotImplemented, Err: err}
	case err != nil:
		return registryFailed(w, p, "removing "+origin, err)
	}
	return writeAdminJSON(w, http.StatusOK, map[string]any{"removed": origin})
}

// decodeRecordPost reads the JSON body of a write, refusing a field it
// does not know (a misspelt "host" would otherwise drop the aliases).
func decodeRecordPost(r *http.Request, v any) error {
	if r.Method != http.MethodPost {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRecordBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("the body must be a JSON object of a school's record: %v", err)}
	}
	return nil
}

// schoolOrigin reads the issuer that names a school.
func schoolOrigin(issuer string) (string, error) {
	if issuer == "" {
		return "", caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(`name the school: "issuer": "<the school's origin>"`)}
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return "", caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("issuer: %v", err)}
	}
	return origin, nil
}

// putRecord writes rec, on condition of its stored version when version
// is set: in the registry's write itself (registry.Conditional), so that
// the condition holds across instances.
func putRecord(ctx context.Context, reg registry.Registry, rec registry.Record, version *int64) (registry.Record, error) {
	if version == nil {
		return reg.Put(ctx, rec)
	}
	c, ok := reg.(registry.Conditional)
	if !ok {
		return registry.Record{}, errNotConditional
	}
	return c.PutIf(ctx, rec, *version)
}

// removeRecord removes the record of issuer, on condition of its stored
// version when version is set, as putRecord writes.
func removeRecord(ctx context.Context, reg registry.Registry, issuer string, version *int64) error {
	if version == nil {
		return reg.Remove(ctx, issuer)
	}
	c, ok := reg.(registry.Conditional)
	if !ok {
		return errNotConditional
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

func noSuchSchool(issuer string, p *platform) error {
	return caddy.APIError{HTTPStatus: http.StatusNotFound,
		Err: fmt.Errorf("no school with issuer %s in the registry %s", issuer, p.cfg.describe())}
}

// platformsNamed are the running platforms, or the one selector names.
func platformsNamed(selector string) ([]*platform, error) {
	all := runningPlatforms()
	if len(all) == 0 {
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no school_platform is configured")}
	}
	if selector == "" {
		return all, nil
	}
	var named []*platform
	for _, p := range all {
		if p.cfg.describe() == selector {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound,
			Err: fmt.Errorf("platform: no platform is %q; the platforms are: %s", selector, describePlatforms(all))}
	}
	return named, nil
}

// onePlatform is the platform a request about one school is for: the
// only one, or the one its selector names. With several platforms the
// request must say which: a school's issuer may be free in each.
func onePlatform(selector string) (*platform, error) {
	ps, err := platformsNamed(selector)
	if err != nil {
		return nil, err
	}
	if len(ps) > 1 {
		what := "this config runs several platforms"
		if selector != "" {
			what = fmt.Sprintf("%q names several platforms (registries postgres are told apart by nothing else)", selector)
		}
		return nil, caddy.APIError{HTTPStatus: http.StatusBadRequest,
			Err: fmt.Errorf(`platform: %s: name one with "platform": %s`, what, describePlatforms(ps))}
	}
	return ps[0], nil
}

func describePlatforms(ps []*platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%q", p.cfg.describe())
	}
	return strings.Join(names, ", ")
}

// writable is the platform's registry once it was read.
func (p *platform) writable() (registry.Registry, error) {
	p.watch.Lock()
	defer p.watch.Unlock()
	reg := p.watch.Registry()
	if reg == nil {
		return nil, errors.New("the registry is not read")
	}
	return reg, nil
}

// validator is the platform's registry's Validator.
func (p *platform) validator() registry.Validator {
	if p.cfg.Postgres != nil {
		return validatePostgresRecord
	}
	return validateDirRecord
}

// writeRegistryDown answers 503 for a platform whose registry was not
// read (yet): Retry-After is its next try.
func writeRegistryDown(w http.ResponseWriter, p *platform) error {
	after := 1
	if f := p.watch.Failure(); f != nil {
		after = f.RetryAfter()
	}
	return school.WriteTemporarilyUnavailable(w, after,
		"the registry "+p.cfg.describe()+" cannot be read now; try again shortly")
}

// registryFailed answers 503 for a registry that did not answer; its
// message, which may name hosts and paths, is logged.
func registryFailed(w http.ResponseWriter, p *platform, what string, err error) error {
	p.ctx.Slogger().Error("the registry failed: "+what, "registry", p.cfg.describe(), "error", err)
	return school.WriteTemporarilyUnavailable(w, 5,
		what+" failed: the registry "+p.cfg.describe()+" did not answer; try again shortly")
}

// view is the school as the platform serves it now.
func (e *platformSchool) view() adminapi.SchoolView {
	v := adminapi.SchoolView{Issuer: e.rec.Issuer, Hosts: e.rec.Hosts, Disabled: e.rec.Disabled, Version: e.rec.Version,
		UpdatedAt: e.rec.UpdatedAt, Platform: e.p.cfg.describe(), State: e.state()}
	if v.Hosts == nil {
		v.Hosts = []string{}
	}
	if f := e.Failed(); f != nil && v.State == "failed" {
		next := f.nextTry()
		v.Reason, v.NextTry = f.failure.Load().Error(), &next
	}
	return v
}

// viewOf is a record read from the registry with its state here, which
// is pending while the platform has not applied this version of it.
func (p *platform) viewOf(rec registry.Record) adminapi.SchoolView {
	v := adminapi.SchoolView{Issuer: rec.Issuer, Hosts: rec.Hosts, Disabled: rec.Disabled, Version: rec.Version,
		UpdatedAt: rec.UpdatedAt, Platform: p.cfg.describe(), State: "pending"}
	if t := p.tables.state.Load(); t != nil {
		if e := t.School(rec.Issuer); e != nil && e.rec.Version == rec.Version {
			v = e.view()
		}
	}
	v.Config = rec.Config
	if v.Hosts == nil {
		v.Hosts = []string{}
	}
	return v
}
