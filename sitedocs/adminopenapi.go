package sitedocs

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/schoolgate/schoolgate/policy"
)

// The school may describe its own admin API in an OpenAPI 3.0 document
// (Site.AdminOpenAPI). Its operations under the admin prefix replace the
// generic per-area ones of the areas it covers, with the security the
// gateway really enforces; its components are renamed with a prefix so
// they cannot collide with ours. Anything the gateway would refuse is left
// out, so the merged document never advertises an operation that cannot
// succeed.

// MaxAdminOpenAPIBytes bounds the upstream document.
const MaxAdminOpenAPIBytes = 4 << 20

// adminComponentPrefix is put before the upstream component names.
const adminComponentPrefix = "Admin_"

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// adminDoc is the part of an upstream document that is merged.
type adminDoc struct {
	paths      map[string]map[string]any
	components map[string]map[string]any
}

// parseAdminOpenAPI reads an upstream OpenAPI 3.0 document, renames its
// component references and checks that it describes at least one
// operation the gateway serves: a document that would merge nothing is
// a misconfiguration (wrong file, wrong admin_prefix), said at load time.
func parseAdminOpenAPI(raw []byte, s Site) (*adminDoc, error) {
	d, err := parseAdminDoc(raw)
	if err != nil {
		return nil, err
	}
	if ops, _ := d.adminPaths(s); len(ops) == 0 {
		return nil, fmt.Errorf("the admin OpenAPI document describes no operation the gateway allows under admin_prefix %s", s.AdminPrefix)
	}
	return d, nil
}

func parseAdminDoc(raw []byte) (*adminDoc, error) {
	if len(raw) > MaxAdminOpenAPIBytes {
		return nil, fmt.Errorf("the admin OpenAPI document is larger than %d bytes", MaxAdminOpenAPIBytes)
	}
	var in struct {
		OpenAPI    string                    `json:"openapi"`
		Paths      map[string]map[string]any `json:"paths"`
		Components map[string]map[string]any `json:"components"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("the admin OpenAPI document is not valid JSON: %v", err)
	}
	if !strings.HasPrefix(in.OpenAPI, "3.0.") {
		return nil, fmt.Errorf("the admin OpenAPI document must be OpenAPI 3.0.x, not %q", in.OpenAPI)
	}
	for _, item := range in.Paths {
		if item == nil {
			return nil, errors.New("the admin OpenAPI document has a path without a path item")
		}
	}
	doc := &adminDoc{paths: in.Paths, components: in.Components}
	for _, item := range doc.paths {
		if err := renameRefs(item); err != nil {
			return nil, err
		}
	}
	for _, kind := range doc.components {
		if err := renameRefs(kind); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// renameRefs rewrites every local component $ref below v; other
// references cannot be followed from our document and are refused.
func renameRefs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(string); ok {
			kind, name, ok := strings.Cut(strings.TrimPrefix(r, "#/components/"), "/")
			if !strings.HasPrefix(r, "#/components/") || !ok || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("the admin OpenAPI document has a $ref %q; only #/components/<kind>/<name> is supported", r)
			}
			x["$ref"] = "#/components/" + kind + "/" + adminComponentPrefix + name
		}
		for _, e := range x {
			if err := renameRefs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := renameRefs(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// AdminScopes tells what the gateway requires of an operator token for a
// request; ok is false when it refuses the request whatever the token.
type AdminScopes func(method, path string) (scopes []string, ok bool)

// PolicyScopes states what a policy requires, for the documents: the
// scopes of an operator requirement, or not ok when the policy refuses
// the operation (or grants it to no operator token).
func PolicyScopes(p *policy.Policy) AdminScopes {
	return func(method, path string) ([]string, bool) {
		req, d := p.Decide(method, path)
		return req.Scopes, d == policy.Allow && req.Audience == policy.AudienceOperator
	}
}

// defaultAdminScopes is the gateway's policy without rule lines.
func defaultAdminScopes(s Site) AdminScopes {
	return PolicyScopes(&policy.Policy{AdminPrefix: s.AdminPrefix})
}

// adminAreaOf is the first path segment below the prefix ("" if none).
func adminAreaOf(prefix, path string) string {
	p := strings.TrimSuffix(prefix, "/") + "/"
	if !strings.HasPrefix(path, p) {
		return ""
	}
	area, _, _ := strings.Cut(strings.TrimPrefix(path, p), "/")
	return area
}

// adminPaths returns the upstream path items the gateway lets through,
// with their security set, and the areas they cover.
func (d *adminDoc) adminPaths(s Site) (obj, map[string]bool) {
	scopesFor := s.AdminScopes
	if scopesFor == nil {
		scopesFor = defaultAdminScopes(s)
	}
	names := make([]string, 0, len(d.paths))
	for p := range d.paths {
		names = append(names, p)
	}
	sort.Strings(names)
	var out obj
	covered := map[string]bool{}
	for _, p := range names {
		area := adminAreaOf(s.AdminPrefix, p)
		if area == "" {
			continue // not behind the gateway's admin API
		}
		if item := adminPathItem(d.paths[p], p, scopesFor); item != nil {
			out.add(p, item)
			covered[area] = true
		}
	}
	return out, covered
}

// adminPathItem keeps the operations the gateway allows, with its
// security and challenge responses; nil when none is left.
func adminPathItem(in map[string]any, path string, scopesFor AdminScopes) map[string]any {
	item := map[string]any{}
	for k, v := range in {
		if k == "servers" || k == "$ref" {
			continue // the operations are served on this origin
		}
		item[k] = v
	}
	ops := 0
	for _, m := range httpMethods {
		op, ok := item[m].(map[string]any)
		if !ok {
			delete(item, m)
			continue
		}
		scopes, allowed := scopesFor(strings.ToUpper(m), path)
		if !allowed {
			delete(item, m)
			continue
		}
		item[m] = adminOperation(op, scopes)
		ops++
	}
	if ops == 0 {
		return nil
	}
	return item
}

func adminOperation(in map[string]any, scopes []string) map[string]any {
	op := make(map[string]any, len(in)+2)
	for k, v := range in {
		op[k] = v
	}
	delete(op, "servers")
	if scopes == nil {
		scopes = []string{}
	}
	op["security"] = []any{map[string]any{"oauth2": scopes}}
	if _, ok := op["tags"]; !ok {
		op["tags"] = []any{"Admin"}
	}
	if id, ok := op["operationId"].(string); ok {
		op["operationId"] = "school_" + id
	}
	responses, _ := op["responses"].(map[string]any)
	merged := map[string]any{}
	for k, v := range responses {
		merged[k] = v
	}
	if _, ok := merged["401"]; !ok {
		merged["401"] = map[string]any{"$ref": "#/components/responses/InvalidToken"}
	}
	if _, ok := merged["403"]; !ok {
		merged["403"] = map[string]any{"$ref": "#/components/responses/InsufficientScope"}
	}
	op["responses"] = merged
	return op
}

// mergeComponents adds the upstream components under their new names;
// upstream security schemes are dropped (the gateway's oauth2 applies).
func (d *adminDoc) mergeComponents(comps obj) obj {
	kinds := make([]string, 0, len(d.components))
	for k := range d.components {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		if kind == "securitySchemes" || len(d.components[kind]) == 0 {
			continue
		}
		names := make([]string, 0, len(d.components[kind]))
		for n := range d.components[kind] {
			names = append(names, n)
		}
		sort.Strings(names)
		var members obj
		if existing, ok := comps.get(kind); ok {
			members = existing.(obj)
		}
		for _, n := range names {
			members.add(adminComponentPrefix+n, d.components[kind][n])
		}
		comps.set(kind, members)
	}
	return comps
}
