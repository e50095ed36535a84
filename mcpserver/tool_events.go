package mcpserver

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

// maxEvents bounds one answer; an agent narrows the range for more.
const maxEvents = 100

var listEventsTool = toolDef{
	name:  toolListEvents,
	title: "List events",
	description: "List the school's dated events (workshops, webinars, photo walks, camps), sorted by start. " +
		"Without from and to it lists every event in the catalog, past ones included; pass from (e.g. today's date) for upcoming events only. An event is listed when it overlaps the range, so one in progress at from is included. " +
		"Each event has slug, title, starts_at and ends_at (RFC 3339 with the event's UTC offset), price (amount in the currency's main unit; absent when none is published), url (the page to book it) and any further fields the school publishes. " +
		"At most 100 events per call; total says how many matched. No sign-in needed.",
	input: closedObject(schema{
		"from": str("Start of the range: a date (2027-03-13, UTC) or an RFC 3339 date-time (2027-03-13T10:00:00+01:00). Default: no start."),
		"to":   str("End of the range, inclusive: a date (the whole day, UTC) or an RFC 3339 date-time. Default: no end."),
	}),
	output: object(schema{
		"from":  str("Start of the range, RFC 3339; absent when open."),
		"to":    str("End of the range, RFC 3339; absent when open."),
		"count": schema{"type": "integer", "description": "Number of events returned."},
		"total": schema{"type": "integer", "description": "Number of events in the range; more than count when the answer was cut at 100."},
		"events": arrayOf(object(schema{
			"slug":      str("Identifier of the event."),
			"title":     str("Title."),
			"starts_at": str("Start, RFC 3339."),
			"ends_at":   str("End, RFC 3339, when known."),
			"price":     priceSchema,
			"url":       urlSchema,
		}, "slug", "title", "starts_at", "url"), "Events sorted by start."),
	}, "count", "total", "events"),
}

type eventsArgs struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type eventsResult struct {
	From   string          `json:"from,omitempty"`
	To     string          `json:"to,omitempty"`
	Count  int             `json:"count"`
	Total  int             `json:"total"`
	Events []catalog.Event `json:"events"`
}

func (s *mcpServer) listEvents(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in eventsArgs
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	from, err := parseDateArg("from", in.From, false)
	if err != nil {
		return argError("%v", err), nil
	}
	to, err := parseDateArg("to", in.To, true)
	if err != nil {
		return argError("%v", err), nil
	}
	if in.To != "" && to.Before(from) {
		return argError("to (%s) is before from (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339)), nil
	}
	ix, unavailable := s.catalogIndex(ctx)
	if unavailable != nil {
		return unavailable, nil
	}
	events := ix.Events(from, to)
	out := eventsResult{Total: len(events), Events: []catalog.Event{}}
	if !from.IsZero() {
		out.From = from.Format(time.RFC3339)
	}
	if !to.IsZero() {
		out.To = to.Format(time.RFC3339)
	}
	for _, e := range events[:min(len(events), maxEvents)] {
		e.Extra = withURL(e.Extra, ix.URL(catalog.KindEvent, e.Slug))
		out.Events = append(out.Events, e)
	}
	out.Count = len(out.Events)
	return jsonResult(out)
}
