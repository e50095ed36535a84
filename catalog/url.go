package catalog

import (
	"encoding/json"
	"net/url"
)

// pagePaths are where the legacy site shows each kind of item.
var pagePaths = map[string]string{
	KindCourse:  "/courses/",
	KindEvent:   "/events/",
	KindPlan:    "/memberships/",
	KindProduct: "/products/",
}

// URL returns the public page of an item: the item's own "url" field when
// it is an absolute http(s) URL (schools that host pages elsewhere say so
// in the feed), else the page on the site. Unknown kinds give "".
func (ix *Index) URL(kind, slug string) string {
	if id, ok := ix.slugs[itemKey{kind, slug}]; ok {
		return ix.items[id].url
	}
	return ix.itemURL(kind, slug, nil)
}

func (ix *Index) itemURL(kind, slug string, extra map[string]json.RawMessage) string {
	if raw, ok := extra["url"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				return s
			}
		}
	}
	path, ok := pagePaths[kind]
	if !ok {
		return ""
	}
	return ix.origin + path + url.PathEscape(slug)
}
