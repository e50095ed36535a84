package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

var kindEnum = []string{catalog.KindCourse, catalog.KindEvent, catalog.KindPlan, catalog.KindProduct}

var searchCatalogTool = toolDef{
	name:  toolSearchCatalog,
	title: "Search the catalog",
	description: "Search the school's public catalog: courses, dated events (workshops, webinars, photo walks), membership plans and digital products. " +
		"Results are ranked best first; a match in the title or name ranks above matches in tags, lecturers and summary. " +
		"Matching ignores case and accents, and a word also matches the start of longer words (\"photo\" finds \"photography\"). " +
		"Each result has kind, slug, title, summary, price (amount in the currency's main unit; absent when none is published), starts_at for events, interval for plans, and url, the item's public page. " +
		"Call get_course with a course's slug for everything about it. No sign-in needed.",
	input: closedObject(schema{
		"query": str("Words to look for, e.g. \"portrait lighting\", a topic, or a lecturer's name. An empty string lists items in catalog order."),
		"kind": schema{"type": "string", "enum": kindEnum,
			"description": "Only return items of this kind: course, event, plan (membership plan) or product (digital product). Omit to search all kinds."},
		"limit": schema{"type": "integer", "minimum": 1, "maximum": catalog.MaxLimit, "default": catalog.DefaultLimit,
			"description": "Maximum number of results, 1 to 50; default 10."},
	}, "query"),
	output: object(schema{
		"query": str("The query as given."),
		"kind":  str("The kind filter, if any."),
		"count": schema{"type": "integer", "description": "Number of results returned."},
		"results": arrayOf(object(schema{
			"kind":      schema{"type": "string", "enum": kindEnum},
			"slug":      str("Identifier of the item within its kind."),
			"title":     str("Title, or name for membership plans."),
			"summary":   str("Short description, when the school gives one."),
			"price":     priceSchema,
			"starts_at": str("Events only: start, RFC 3339."),
			"interval":  str("Membership plans only: billing interval, e.g. month or year."),
			"url":       urlSchema,
			"score":     schema{"type": "number", "description": "Relevance; higher is better. 0 when the query was empty."},
		}, "kind", "slug", "title", "url", "score"), "Matching items, best first."),
	}, "query", "count", "results"),
}

type searchArgs struct {
	Query *string `json:"query"`
	Kind  string  `json:"kind"`
	Limit *int    `json:"limit"`
}

type searchResult struct {
	Query   string        `json:"query"`
	Kind    string        `json:"kind,omitempty"`
	Count   int           `json:"count"`
	Results []catalog.Hit `json:"results"`
}

func (s *mcpServer) searchCatalog(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in searchArgs
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	if in.Query == nil {
		return argError("query is required (an empty string lists the catalog)"), nil
	}
	if in.Kind != "" && !catalog.ValidKind(in.Kind) {
		return argError("kind %q is not one of course, event, plan, product", clipString(in.Kind)), nil
	}
	limit := catalog.DefaultLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > catalog.MaxLimit {
			return argError("limit must be between 1 and %d", catalog.MaxLimit), nil
		}
		limit = *in.Limit
	}
	ix, unavailable := s.catalogIndex()
	if unavailable != nil {
		return unavailable, nil
	}
	hits := ix.Search(*in.Query, in.Kind, limit)
	if hits == nil {
		hits = []catalog.Hit{}
	}
	return jsonResult(searchResult{Query: *in.Query, Kind: in.Kind, Count: len(hits), Results: hits})
}
