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
		"Results are ranked best first: items matching more of the query's words come first, and a match in the title or name counts more than one in tags, lecturers or summary. " +
		"Matching ignores case and accents and finds other forms of a word in the catalog's language (\"portraits\" finds \"Portrait\"), a word also matches the start of longer words (\"photo\" finds \"photography\"), and words of four letters or more tolerate a typo (two from eight letters on): \"lightrom\" finds \"Lightroom\". " +
		"Common words such as \"the\" or \"about\" are ignored; a query of only such words, or longer than 500 characters or 16 words, is refused with the reason. " +
		"Each result has kind, slug, title, summary, price (amount in the currency's main unit; absent when none is published), starts_at for events, interval for plans, url, the item's public page, and matched when a word was found only by tolerating a typo (e.g. \"sextant\" for \"sextent\"): tell the person what was searched instead. " +
		"Call get_course with a course's slug for everything about it. No sign-in needed.",
	input: closedObject(schema{
		"query": schema{"type": "string", "maxLength": catalog.MaxQueryLength,
			"description": "Words to look for, e.g. \"portrait lighting\", a topic, or a lecturer's name. An empty string lists items in catalog order."},
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
			"score":     schema{"type": "number", "minimum": 0, "maximum": 1, "description": "Relevance from 0 to 1; higher is better. 0 when the query was empty."},
			"matched":   str("Present when the item matched only by tolerating a typo: the item's word that stood in for each such query word, e.g. \"sextant\" for \"sextent\"."),
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

func (s *mcpServer) searchCatalog(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	ix, unavailable := s.catalogIndex(ctx)
	if unavailable != nil {
		return unavailable, nil
	}
	if err := ix.CheckQuery(*in.Query); err != nil {
		return argError("%v", err), nil
	}
	hits := searchTraced(ctx, ix, *in.Query, in.Kind, limit)
	if hits == nil {
		hits = []catalog.Hit{}
	}
	return jsonResult(searchResult{Query: *in.Query, Kind: in.Kind, Count: len(hits), Results: hits})
}
