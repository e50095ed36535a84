package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// bindArgs decodes a tool call's arguments into the struct dst points to,
// refusing unknown arguments and wrong types. This is done here rather
// than with mcp-go's schema validation because its messages ("<root>:
// &{Properties:[sort]}") do not tell an agent what to fix.
func bindArgs(req mcp.CallToolRequest, dst any) error {
	raw := req.Params.RawArguments
	if len(raw) == 0 && req.Params.Arguments != nil {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return errors.New("arguments must be a JSON object")
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return errors.New("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return fmt.Errorf("argument %q must be %s, not %s", te.Field, jsonType(te.Type), te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return fmt.Errorf("unknown argument %s; this tool takes %s", name, argNames(dst))
		default:
			return errors.New("arguments must be a JSON object")
		}
	}
	return nil
}

func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return t.Kind().String()
	}
}

// argNames lists the arguments a tool takes, from dst's JSON tags.
func argNames(dst any) string {
	t := reflect.TypeOf(dst).Elem()
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, ", ")
}

// argError is the tool result for arguments that do not make sense.
func argError(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError("Invalid arguments: " + fmt.Sprintf(format, args...))
}
