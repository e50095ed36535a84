package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
)

var getCourseTool = toolDef{
	name:  toolGetCourse,
	title: "Get a course",
	description: "Get one course of the school's catalog in full: title, summary, price (amount in the currency's main unit; absent when none is published), lecturers, tags, the url of its public page, and any further fields the school publishes for it (level, duration, modules, ...). " +
		"Find slugs with search_catalog. No sign-in needed.",
	input: closedObject(schema{
		"slug": str("The course's slug, as search_catalog returns it, e.g. \"portrait-photography\"."),
	}, "slug"),
	output: object(schema{
		"slug":      str("Identifier of the course."),
		"title":     str("Title."),
		"summary":   str("Short description."),
		"price":     priceSchema,
		"lecturers": arrayOf(schema{"type": "string"}, "Names of the people who teach it."),
		"tags":      arrayOf(schema{"type": "string"}, "Topics and levels."),
		"url":       urlSchema,
	}, "slug", "title", "url"),
}

type courseArgs struct {
	Slug string `json:"slug"`
}

func (s *mcpServer) getCourse(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in courseArgs
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	if in.Slug == "" {
		return argError("slug is required"), nil
	}
	ix, unavailable := s.catalogIndex(ctx)
	if unavailable != nil {
		return unavailable, nil
	}
	c, ok := courseView(ix, in.Slug)
	if !ok {
		return mcp.NewToolResultError(s.noSuchCourse(ix, in.Slug)), nil
	}
	return jsonResult(c)
}

// courseView is a course as get_course returns it and as its resource
// reads (resources.go): every field of the feed plus its public url.
func courseView(ix *catalog.Index, slug string) (catalog.Course, bool) {
	c, ok := ix.Course(slug)
	if ok {
		c.Extra = withURL(c.Extra, ix.URL(catalog.KindCourse, c.Slug))
	}
	return c, ok
}

// noSuchCourse suggests courses whose words resemble the slug: agents
// often guess a slug from a title.
func (s *mcpServer) noSuchCourse(ix *catalog.Index, slug string) string {
	msg := fmt.Sprintf("No course with slug %q.", clipString(slug))
	var near []string
	for _, h := range ix.Search(slug, catalog.KindCourse, 3) {
		near = append(near, h.Slug)
	}
	if len(near) > 0 {
		msg += " Similar courses: " + strings.Join(near, ", ") + "."
	}
	return msg + " Use search_catalog to find course slugs."
}
