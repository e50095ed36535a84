package catalog

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The functions here walk JSON that json.Valid has accepted, so they look
// for where values end and never for mistakes: every refusal is still
// made, and worded, by encoding/json. They let Parse go over a feed once
// instead of once per level of nesting.

// member is one key and value of an object; the value is its exact bytes.
type member struct {
	key []byte // unquoted
	val []byte
}

// appendMembers appends the members of obj to dst and reports whether obj
// is an object at all.
func appendMembers(dst []member, obj []byte) ([]member, bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return dst, false
	}
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return dst, true
	}
	for {
		end := stringEnd(obj, i)
		key := unquote(obj[i:end])
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		end = valueEnd(obj, i)
		dst = append(dst, member{key, obj[i:end]})
		i = skipSpace(obj, end)
		if obj[i] == '}' {
			return dst, true
		}
		i = skipSpace(obj, i+1) // past the comma
	}
}

// arrayItems calls f with each element of the array arr until f returns
// false.
func arrayItems(arr []byte, f func(item []byte) bool) {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return
	}
	for {
		end := valueEnd(arr, i)
		if !f(arr[i:end]) {
			return
		}
		i = skipSpace(arr, end)
		if arr[i] == ']' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}

func arrayLen(arr []byte) int {
	n := 0
	arrayItems(arr, func([]byte) bool { n++; return true })
	return n
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i]: the
// first quote not escaped, that is after an even number of backslashes.
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		i += bytes.IndexByte(b[i:], '"')
		n := 0
		for b[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
}

// valueEnd returns the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default: // a number, true, false or null
		for i < len(b) && !isDelim(b[i]) {
			i++
		}
		return i
	}
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

// plainString returns the contents of the string token tok when they need
// no unescaping and are valid UTF-8, which is when encoding/json would
// take them as they are.
func plainString(tok []byte) ([]byte, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return nil, false
	}
	s := tok[1 : len(tok)-1]
	return s, bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)
}

// unquote decodes the string token tok as encoding/json does its keys.
func unquote(tok []byte) []byte {
	if s, ok := plainString(tok); ok {
		return s
	}
	var s string
	_ = json.Unmarshal(tok, &s) // tok is a valid string
	return []byte(s)
}
