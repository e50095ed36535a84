package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

var listPlansTool = toolDef{
	name:  toolListMembershipPlans,
	title: "List membership plans",
	description: "List the school's membership plans: recurring subscriptions that give access to courses. " +
		"Each plan has slug, name, price (amount in the currency's main unit, charged once per interval; absent when none is published), interval (e.g. month or year), url (the page to subscribe) and any further fields the school publishes. No sign-in needed.",
	input: closedObject(schema{}),
	output: object(schema{
		"count": schema{"type": "integer", "description": "Number of plans."},
		"plans": arrayOf(object(schema{
			"slug":     str("Identifier of the plan."),
			"name":     str("Name."),
			"price":    priceSchema,
			"interval": str("Billing interval, e.g. month or year."),
			"url":      urlSchema,
		}, "slug", "name", "url"), "Plans in the school's order."),
	}, "count", "plans"),
}

type plansResult struct {
	Count int                      `json:"count"`
	Plans []catalog.MembershipPlan `json:"plans"`
}

func (s *mcpServer) listPlans(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct{}
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	ix, unavailable := s.catalogIndex(ctx)
	if unavailable != nil {
		return unavailable, nil
	}
	out := plansResult{Plans: ix.Plans()}
	if out.Plans == nil {
		out.Plans = []catalog.MembershipPlan{}
	}
	for i := range out.Plans {
		out.Plans[i].Extra = withURL(out.Plans[i].Extra, ix.URL(catalog.KindPlan, out.Plans[i].Slug))
	}
	out.Count = len(out.Plans)
	return jsonResult(out)
}
