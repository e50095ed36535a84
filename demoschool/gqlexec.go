package demoschool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// A tiny GraphQL executor over a validated document. gqlparser parses and
// validates against schema.graphql; this walks the chosen operation,
// honouring aliases, fragments, @skip/@include and __typename, and asks the
// Go objects in gqlresolvers.go for field values. A full engine (gqlgen)
// would be a code generator and a large dependency for ten fields.

// gqlObject is a value of a GraphQL object type.
type gqlObject interface {
	typeName() string
	// field resolves one field other than __typename. It returns a scalar,
	// a gqlObject, a []gqlObject or nil (GraphQL null).
	field(x *execution, f *ast.Field) (any, error)
}

// execution is the state of one operation.
type execution struct {
	doc  *ast.QueryDocument
	vars map[string]any // coerced by validator.VariableValues
}

// object is a JSON object that keeps its keys in selection order, as
// GraphQL responses must.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		buf.Write(k)
		buf.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// fieldGroup is the fields that share one response key; validation has
// made sure they ask for the same thing, so their sub-selections merge.
type fieldGroup struct {
	key    string
	fields []*ast.Field
}

// selectionSet evaluates set on obj.
func (x *execution) selectionSet(set ast.SelectionSet, obj gqlObject, path ast.Path) (object, error) {
	groups, err := x.collect(set, obj.typeName(), nil, map[string]bool{})
	if err != nil {
		return nil, err
	}
	out := make(object, 0, len(groups))
	for _, g := range groups {
		f := g.fields[0]
		p := append(path[:len(path):len(path)], ast.PathName(g.key))
		var v any
		if f.Name == "__typename" {
			v = obj.typeName()
		} else {
			raw, err := obj.field(x, f)
			if err != nil {
				return nil, pathError(p, err)
			}
			if v, err = x.complete(raw, g.fields, p); err != nil {
				return nil, err
			}
		}
		out = append(out, member{g.key, v})
	}
	return out, nil
}

// complete turns a resolved value into response JSON, descending into
// objects with the merged sub-selections of the group.
func (x *execution) complete(v any, fields []*ast.Field, path ast.Path) (any, error) {
	switch v := v.(type) {
	case gqlObject:
		return x.selectionSet(subSelections(fields), v, path)
	case []gqlObject:
		list := make([]any, len(v))
		for i, item := range v {
			p := append(path[:len(path):len(path)], ast.PathIndex(i))
			c, err := x.complete(item, fields, p)
			if err != nil {
				return nil, err
			}
			list[i] = c
		}
		return list, nil
	default:
		return v, nil
	}
}

func subSelections(fields []*ast.Field) ast.SelectionSet {
	if len(fields) == 1 {
		return fields[0].SelectionSet
	}
	var set ast.SelectionSet
	for _, f := range fields {
		set = append(set, f.SelectionSet...)
	}
	return set
}

// collect implements CollectFields of the GraphQL spec: it flattens
// fragments that apply to typeName and drops skipped selections, grouping
// fields by response key in first-seen order.
func (x *execution) collect(set ast.SelectionSet, typeName string, groups []*fieldGroup, visited map[string]bool) ([]*fieldGroup, error) {
	for _, sel := range set {
		var dirs ast.DirectiveList
		switch s := sel.(type) {
		case *ast.Field:
			dirs = s.Directives
		case *ast.FragmentSpread:
			dirs = s.Directives
		case *ast.InlineFragment:
			dirs = s.Directives
		}
		include, err := x.included(dirs)
		if err != nil {
			return nil, err
		}
		if !include {
			continue
		}
		switch s := sel.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			found := false
			for _, g := range groups {
				if g.key == key {
					g.fields = append(g.fields, s)
					found = true
					break
				}
			}
			if !found {
				groups = append(groups, &fieldGroup{key: key, fields: []*ast.Field{s}})
			}
		case *ast.FragmentSpread:
			if visited[s.Name] {
				continue
			}
			visited[s.Name] = true
			frag := x.doc.Fragments.ForName(s.Name)
			if frag == nil || frag.TypeCondition != typeName {
				continue
			}
			if groups, err = x.collect(frag.SelectionSet, typeName, groups, visited); err != nil {
				return nil, err
			}
		case *ast.InlineFragment:
			if s.TypeCondition != "" && s.TypeCondition != typeName {
				continue
			}
			if groups, err = x.collect(s.SelectionSet, typeName, groups, visited); err != nil {
				return nil, err
			}
		}
	}
	return groups, nil
}

// included evaluates @skip and @include.
func (x *execution) included(dirs ast.DirectiveList) (bool, error) {
	for _, d := range dirs {
		if d.Name != "skip" && d.Name != "include" {
			continue
		}
		a := d.Arguments.ForName("if")
		if a == nil {
			return false, fmt.Errorf("@%s needs an if argument", d.Name)
		}
		v, err := x.value(a.Value)
		if err != nil {
			return false, err
		}
		b, ok := v.(bool)
		if !ok {
			return false, fmt.Errorf("@%s(if:) must be a Boolean", d.Name)
		}
		if b == (d.Name == "skip") {
			return false, nil
		}
	}
	return true, nil
}

// value evaluates a literal or a variable.
func (x *execution) value(v *ast.Value) (any, error) {
	if v.Kind == ast.Variable {
		return x.vars[v.Raw], nil
	}
	return v.Value(x.vars)
}

// arg returns an argument's value: the given one, else the schema default.
// present is false when neither exists or a variable was left unset.
func (x *execution) arg(f *ast.Field, name string) (v any, present bool, err error) {
	if a := f.Arguments.ForName(name); a != nil {
		if a.Value.Kind != ast.Variable {
			v, err = a.Value.Value(x.vars)
			return v, true, err
		}
		if v, ok := x.vars[a.Value.Raw]; ok {
			return v, true, nil
		}
	}
	if f.Definition != nil {
		if d := f.Definition.Arguments.ForName(name); d != nil && d.DefaultValue != nil {
			v, err = d.DefaultValue.Value(nil)
			return v, true, err
		}
	}
	return nil, false, nil
}

// intArg reads an Int argument; null and absent both give ok == false.
func (x *execution) intArg(f *ast.Field, name string) (n int, ok bool, err error) {
	v, present, err := x.arg(f, name)
	if err != nil || !present || v == nil {
		return 0, false, err
	}
	var i int64
	switch v := v.(type) {
	case int64:
		i = v
	case int:
		i = int64(v)
	case json.Number:
		if i, err = v.Int64(); err != nil {
			return 0, false, fmt.Errorf("argument %s: %v is not an Int", name, v)
		}
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
			return 0, false, fmt.Errorf("argument %s: %v is not an Int", name, v)
		}
		i = int64(v)
	default:
		return 0, false, fmt.Errorf("argument %s: %v is not an Int", name, v)
	}
	if i < math.MinInt32 || i > math.MaxInt32 {
		return 0, false, fmt.Errorf("argument %s: %d does not fit a 32-bit Int", name, i)
	}
	return int(i), true, nil
}

// stringArg reads a String argument; null and absent give "".
func (x *execution) stringArg(f *ast.Field, name string) (string, error) {
	v, present, err := x.arg(f, name)
	if err != nil || !present || v == nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %s: %v is not a String", name, v)
	}
	return s, nil
}

// pathError names the field that failed, as GraphQL clients expect.
func pathError(p ast.Path, err error) *gqlerror.Error {
	return &gqlerror.Error{Message: err.Error(), Path: p}
}
