package mcpserver

// Catalog items as MCP resources, readable by any client without signing
// in. Every item is a resource at school://{kind}/{slug}:
//
//	school://courses/portrait-photography
//	school://events/winter-light-photo-walk
//	school://plans/monthly
//	school://products/posing-guide
//
// A custom scheme rather than the item's https page because the spec keeps
// https URIs for resources a client can fetch from the web on its own, and
// the page is HTML for people while a resource reads as the JSON the tools
// return; a page may also live on another host (the feed's url field),
// which no template could describe. The kind is the URI's authority and
// the slug its one path segment, so every URI parses as an absolute URI
// with a host, which strict URL parsers (WHATWG, pydantic) accept, and
// catalog slugs need no escaping in it.

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/schoolgate/schoolgate/catalog"
)

const (
	resourceScheme = "school://"
	resourceMIME   = "application/json"
	// listPageSize is the page size of resources/list. mcp-go paginates
	// every list with one limit, so tools/list and the template list are
	// paged by it too; both are far shorter.
	listPageSize = 100
	// maxDescription keeps resources/list compact: the description is a
	// hint, and the resource itself has the full summary.
	maxDescription = 160
)

// resourceKind is one kind of catalog item as a resource.
type resourceKind struct {
	authority, label, about string
}

var (
	courseKind  = resourceKind{"courses", "Course", "A course of the catalog by slug, as get_course returns it: title, summary, price, lecturers, tags, url and any further fields the school publishes."}
	eventKind   = resourceKind{"events", "Event", "A dated event by slug, as list_events shows it: title, starts_at, ends_at, price, url (the page to book it)."}
	planKind    = resourceKind{"plans", "Membership plan", "A membership plan by slug, as list_membership_plans shows it: name, price per interval, url (the page to subscribe)."}
	productKind = resourceKind{"products", "Digital product", "A digital product by slug: title, price, url (the page to buy it) and any further fields the school publishes."}

	resourceKinds = []resourceKind{courseKind, eventKind, planKind, productKind}
)

func (k resourceKind) uri(slug string) string { return resourceScheme + k.authority + "/" + slug }

func (k resourceKind) template() mcp.ResourceTemplate {
	return mcp.NewResourceTemplate(k.uri("{slug}"), k.authority,
		mcp.WithTemplateTitle(k.label),
		mcp.WithTemplateDescription(k.about),
		mcp.WithTemplateMIMEType(resourceMIME))
}

// addResources serves the catalog as resources. mcp-go lists, pages and
// resolves them from its own registry, which resourceRegistry keeps in
// step with the catalog, and the templates are always advertised.
func (s *mcpServer) addResources(core *server.MCPServer, hooks *server.Hooks) {
	r := &resourceRegistry{core: core, catalog: s.opts.Catalog, notLoaded: s.notLoadedTemplates()}
	core.AddResourceTemplates(r.notLoaded...)
	hooks.AddBeforeListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest) { r.sync(ctx) })
	hooks.AddBeforeReadResource(func(ctx context.Context, _ any, _ *mcp.ReadResourceRequest) { r.sync(ctx) })
	hooks.AddAfterListResourceTemplates(advertiseTemplates)
}

// resourceRegistry keeps mcp-go's resource registry in step with the
// catalog, so that mcp-go answers a URI it does not know with the
// protocol's resource-not-found error (-32002; -32602 from protocol
// 2026-07-28 on). An error from a handler of ours can only go out as an
// internal error (-32603), so no unknown slug may reach one: the
// templates are therefore registered, with a handler that says the catalog
// is not loaded yet, only while there is no catalog, and otherwise merely
// advertised (advertiseTemplates).
type resourceRegistry struct {
	core      *server.MCPServer
	catalog   func(context.Context) *catalog.Index
	notLoaded []server.ServerResourceTemplate

	mu   sync.Mutex
	ix   *catalog.Index  // the catalog the registry holds; nil: none yet
	uris map[string]bool // its resources
	// synced is ix, readable without the lock once the registry holds it.
	synced atomic.Pointer[catalog.Index]
}

// sync runs before every resources/list and resources/read. It costs a
// lock and a pointer comparison unless a new catalog was imported, and it
// adds the new items before removing stale ones, so that a concurrent read
// never misses an item both catalogs have.
func (r *resourceRegistry) sync(ctx context.Context) {
	ix := r.catalog(ctx)
	if r.synced.Load() == ix && ix != nil {
		return // the usual case: no lock on the request path
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ix == r.ix {
		return
	}
	entries := catalogResources(ix)
	uris := make(map[string]bool, len(entries))
	for _, e := range entries {
		uris[e.Resource.URI] = true
	}
	var stale []string
	for u := range r.uris {
		if !uris[u] {
			stale = append(stale, u)
		}
	}
	r.core.AddResources(entries...)
	r.core.DeleteResources(stale...)
	if ix == nil {
		r.core.SetResourceTemplates(r.notLoaded...)
	} else {
		r.core.SetResourceTemplates()
	}
	r.ix, r.uris = ix, uris
	r.synced.Store(ix)
}

// notLoadedTemplates answer every catalog URI while there is no catalog.
func (s *mcpServer) notLoadedTemplates() []server.ServerResourceTemplate {
	read := func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, fmt.Errorf("the catalog of %s has not been loaded yet; try again in a minute", s.opts.SiteName)
	}
	var out []server.ServerResourceTemplate
	for _, k := range resourceKinds {
		out = append(out, server.ServerResourceTemplate{Template: k.template(), Handler: read})
	}
	return out
}

// advertiseTemplates lists the templates whether or not they are
// registered. They fit on one page, so later pages are left alone.
func advertiseTemplates(_ context.Context, _ any, req *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil || req.Params.Cursor != "" {
		return
	}
	res.ResourceTemplates = make([]mcp.ResourceTemplate, 0, len(resourceKinds))
	for _, k := range resourceKinds {
		res.ResourceTemplates = append(res.ResourceTemplates, k.template())
	}
}

// catalogItem is what a resource needs to know of one item.
type catalogItem struct {
	kind                resourceKind
	slug, title, detail string
	view                func() any // the item as it reads, built on read
}

// catalogResources makes a resource of every item in ix; mcp-go lists
// them sorted by name. The first of duplicate slugs wins, as in the index;
// a slug that is not URL-safe (a feed that failed validation) gets no
// resource.
func catalogResources(ix *catalog.Index) []server.ServerResource {
	if ix == nil {
		return nil
	}
	items := catalogItems(ix)
	out := make([]server.ServerResource, 0, len(items))
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		uri := it.kind.uri(it.slug)
		if seen[uri] || !catalog.ValidSlug(it.slug) {
			continue
		}
		seen[uri] = true
		out = append(out, server.ServerResource{Resource: it.resource(uri), Handler: it.read(uri)})
	}
	return out
}

// catalogItems lists the items of ix. Views are built on read and from a
// copy, so that listing stays cheap and the shared catalog is untouched;
// they show an item exactly as the tools do.
func catalogItems(ix *catalog.Index) []catalogItem {
	f := ix.Feed()
	items := make([]catalogItem, 0, len(f.Courses)+len(f.Events)+len(f.MembershipPlans)+len(f.DigitalProducts))
	for _, c := range f.Courses {
		items = append(items, catalogItem{courseKind, c.Slug, c.Title, c.Summary, func() any {
			v, _ := courseView(ix, c.Slug)
			return v
		}})
	}
	for _, e := range f.Events {
		items = append(items, catalogItem{eventKind, e.Slug, e.Title, prefixed("starts ", e.StartsAt), func() any {
			v := e
			v.Extra = withURL(v.Extra, ix.URL(catalog.KindEvent, v.Slug))
			return v
		}})
	}
	for _, p := range f.MembershipPlans {
		items = append(items, catalogItem{planKind, p.Slug, p.Name, prefixed("billed per ", p.Interval), func() any {
			v := p
			v.Extra = withURL(v.Extra, ix.URL(catalog.KindPlan, v.Slug))
			return v
		}})
	}
	for _, d := range f.DigitalProducts {
		items = append(items, catalogItem{productKind, d.Slug, d.Title, "", func() any {
			v := d
			v.Extra = withURL(v.Extra, ix.URL(catalog.KindProduct, v.Slug))
			return v
		}})
	}
	return items
}

// resource describes the item in resources/list. The name is the URI's
// path, kind included, rather than the bare slug: mcp-go pages the list by
// name, so names must be unique, and a course and an event may share a
// slug.
func (it catalogItem) resource(uri string) mcp.Resource {
	return mcp.NewResource(uri, it.kind.authority+"/"+it.slug,
		mcp.WithResourceTitle(it.title),
		mcp.WithResourceDescription(describe(it.kind.label, it.detail)),
		mcp.WithMIMEType(resourceMIME))
}

func (it catalogItem) read(uri string) server.ResourceHandlerFunc {
	return func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		b, err := json.Marshal(it.view())
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: resourceMIME, Text: string(b)}}, nil
	}
}

// guardResource logs a panic in a resource handler and answers the read
// with an error instead, as guard does for tools.
func (s *mcpServer) guardResource(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) (c []mcp.ResourceContents, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("mcp: resource panicked", "uri", clipString(req.Params.URI), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				c, err = nil, fmt.Errorf("reading %s failed with an internal error; the gateway logged it", clipString(req.Params.URI))
			}
		}()
		return next(ctx, req)
	}
}

// describe is a resource's description: its kind, then a clipped detail.
func describe(label, detail string) string {
	detail = strings.Join(strings.Fields(detail), " ")
	if detail == "" {
		return label
	}
	if r := []rune(detail); len(r) > maxDescription {
		detail = strings.TrimSpace(string(r[:maxDescription])) + "…"
	}
	return label + ": " + detail
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
