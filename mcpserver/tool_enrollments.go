package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/policy"
)

// enrollmentsQuery reads the fields of section 2.1 of the platform
// description; the upstream owns the schema.
const enrollmentsQuery = `query($first:Int){viewer{id email enrolledCourses(first:$first){nodes{slug expireDate hasLifetimeAccess lastWatchedLecture{lectureId positionSeconds}}}}}`

const (
	defaultEnrollments = 20
	maxEnrollments     = 100
)

var myEnrollmentsTool = toolDef{
	name:  toolMyEnrollments,
	title: "My enrollments",
	description: "List the courses the signed-in member is enrolled in at this school, with access and progress: " +
		"slug, expireDate (when access ends), hasLifetimeAccess (true when access never ends), lastWatchedLecture (lectureId and positionSeconds, the playback position to resume from), " +
		"and, when the course is in the public catalog, its title and url.",
	input: closedObject(schema{
		"first": schema{"type": "integer", "minimum": 1, "maximum": maxEnrollments, "default": defaultEnrollments,
			"description": "How many enrollments to return, 1 to 100; default 20."},
	}),
}

type enrollmentsArgs struct {
	First *int `json:"first"`
}

type enrollmentsResponse struct {
	Data *struct {
		Viewer *struct {
			ID              json.RawMessage `json:"id"`
			Email           string          `json:"email"`
			EnrolledCourses *struct {
				Nodes []map[string]json.RawMessage `json:"nodes"`
			} `json:"enrolledCourses"`
		} `json:"viewer"`
	} `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

type enrollmentsResult struct {
	Viewer      viewerSummary                `json:"viewer"`
	Count       int                          `json:"count"`
	Enrollments []map[string]json.RawMessage `json:"enrollments"`
}

type viewerSummary struct {
	ID    json.RawMessage `json:"id,omitempty"`
	Email string          `json:"email,omitempty"`
}

func (s *mcpServer) myEnrollments(ctx context.Context, id *policy.Token, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in enrollmentsArgs
	if err := bindArgs(req, &in); err != nil {
		return argError("%v", err), nil
	}
	first := defaultEnrollments
	if in.First != nil {
		if *in.First < 1 || *in.First > maxEnrollments {
			return argError("first must be between 1 and %d", maxEnrollments), nil
		}
		first = *in.First
	}
	raw, err := s.opts.Account(ctx, id, enrollmentsQuery, map[string]any{"first": first})
	if err != nil {
		s.opts.Logger.Warn("mcp: my_enrollments: the Account API failed", "subject", id.Subject, "error", err)
		return mcp.NewToolResultError(fmt.Sprintf("The school's Account API failed: %v", err)), nil
	}
	var resp enrollmentsResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return mcp.NewToolResultError("The school's Account API answered with something that is not a GraphQL response."), nil
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, len(resp.Errors))
		for i, e := range resp.Errors {
			msgs[i] = e.Message
		}
		return mcp.NewToolResultError("The school's Account API answered with errors: " + strings.Join(msgs, "; ")), nil
	}
	if resp.Data == nil || resp.Data.Viewer == nil {
		return mcp.NewToolResultError("The school's Account API returned no data for this member."), nil
	}
	v := resp.Data.Viewer
	out := enrollmentsResult{Viewer: viewerSummary{ID: v.ID, Email: v.Email}, Enrollments: []map[string]json.RawMessage{}}
	if v.EnrolledCourses != nil {
		ix := s.opts.Catalog(ctx)
		for _, node := range v.EnrolledCourses.Nodes {
			if node != nil {
				describeCourse(ix, node)
				out.Enrollments = append(out.Enrollments, node)
			}
		}
	}
	out.Count = len(out.Enrollments)
	return jsonResult(out)
}

// describeCourse adds the catalog's title and page to an enrollment, so an
// agent can name the course and link to it without another call.
func describeCourse(ix *catalog.Index, node map[string]json.RawMessage) {
	var slug string
	if ix == nil || json.Unmarshal(node["slug"], &slug) != nil {
		return
	}
	c, ok := ix.Course(slug)
	if !ok {
		return
	}
	if _, has := node["title"]; !has {
		node["title"], _ = json.Marshal(c.Title)
	}
	if _, has := node["url"]; !has {
		node["url"], _ = json.Marshal(ix.URL(catalog.KindCourse, slug))
	}
}
