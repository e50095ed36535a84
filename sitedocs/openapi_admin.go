package sitedocs

import "strings"

// adminAPIPaths are the operator admin API's operations: the school's own
// description where it covers an area (adminopenapi.go), generic ones per
// area of the scope table elsewhere. None without an admin prefix.
func adminAPIPaths(s Site, admin *adminDoc) obj {
	if s.AdminPrefix == "" {
		return nil
	}
	var described obj
	covered := map[string]bool{}
	if admin != nil {
		described, covered = admin.adminPaths(s)
	}
	var paths obj
	for _, a := range adminAreas(s.Scopes) {
		if covered[a.Name] || covered[strings.ReplaceAll(a.Name, "_", "-")] {
			continue
		}
		base := s.AdminPrefix + "/" + a.Name
		paths = paths.with(base, adminOperations(a, false, s)).with(base+"/{path}", adminOperations(a, true, s))
	}
	return append(paths, described...)
}

// adminOperations are the operations of one admin area, on its collection
// path or on any path below it. Reads need <area>:read, the rest
// <area>:write, as the gateway enforces. What is common to every operation
// is said once, on the path item and the Admin tag.
func adminOperations(a adminArea, item bool, s Site) obj {
	suffix, where := "", "the "+a.Words()+" area"
	if item {
		suffix, where = "Item", "a resource below the "+a.Words()+" area"
	}
	ops := obj{
		{"summary", "Admin API: " + where},
		{"description", "Proxied to the school's admin API with the caller's identity; request and response " +
			"bodies are the school's own. Reads need `" + a.Name + ":read`, writes `" + a.Name + ":write`."},
	}
	var params []obj
	if item {
		params = append(params, ref("parameters", "AdminPath"))
	}
	if params = append(params, dpopParams(s)...); params != nil {
		ops = ops.with("parameters", params)
	}
	op := func(method, verb, scope string, body bool) obj {
		o := operation{tag: "Admin", summary: verb + " (" + scope + ")", id: "admin_" + a.Name + suffix + "_" + method,
			security: oauthScopes(scope), responses: protectedResponses(ref("responses", "AdminResult"))}
		if body {
			o.requestBody = ref("requestBodies", "AdminBody")
		}
		return o.obj()
	}
	if a.Read {
		ops = ops.with("get", op("get", "Read", a.Name+":read", false))
	}
	if a.Write {
		w := a.Name + ":write"
		ops = ops.with("post", op("post", "Create or act", w, true)).
			with("put", op("put", "Replace", w, true)).
			with("patch", op("patch", "Update", w, true)).
			with("delete", op("delete", "Delete", w, false))
	}
	return ops
}
