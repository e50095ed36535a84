package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxFeedBytes caps a feed. Ten thousand courses with generous summaries
// fit in a few megabytes; anything larger is a mistake or an attack, and
// the whole feed is held in memory while it is parsed.
const MaxFeedBytes = 8 << 20

// Parse decodes and validates a catalog feed. The feed comes from the
// legacy server or a URL, so it is treated as untrusted input: size-capped,
// strictly one JSON object, and every item checked (see Feed.Validate).
func Parse(raw []byte) (*Feed, error) {
	if len(raw) > MaxFeedBytes {
		return nil, fmt.Errorf("catalog feed is %d bytes, more than the limit of %d", len(raw), MaxFeedBytes)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, errors.New("catalog feed is empty")
	}
	if trimmed[0] != '{' {
		return nil, errors.New("catalog feed must be a JSON object")
	}
	// The whole input is checked first, so trailing garbage after the
	// object is a syntax error rather than silently ignored, and the
	// decoder then goes over the feed once, knowing it well formed.
	if !json.Valid(raw) {
		return nil, describeJSONError(raw, json.Unmarshal(raw, new(json.RawMessage)))
	}
	var f Feed
	if err := decodeFeed(new(decoder), trimmed, &f); err != nil {
		return nil, fmt.Errorf("catalog feed: %v", err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// describeJSONError adds a line and column to syntax errors: operators
// edit feeds by hand, and a byte offset into a 5 MB file is no help.
func describeJSONError(raw []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("catalog feed: %v", err)
	}
	off := min(int(se.Offset), len(raw))
	line := 1 + bytes.Count(raw[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(raw[:off], '\n')
	return fmt.Errorf("catalog feed is not valid JSON (line %d, column %d): %v", line, col, se)
}
