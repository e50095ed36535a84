package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// A school's options are changed by what the flags name and nothing
// else: each of --config, --option, --unset and --upstream is a JSON
// merge patch (RFC 7396) of the record's school_gateway options, applied
// in that order (the options in the order given) onto the options the
// record has (add: none). A patch's object merges into the option's
// object, any other value replaces the option's, null removes it.

// optionChange is one --option name=value or --unset name: a path of
// option names (a.b is b inside the object a) and the value, nil to
// remove it.
type optionChange struct {
	path  []string
	value any
}

// ConfigChanges reads the flags that change the options, as merge
// patches in the order they apply.
func ConfigChanges(cmd *cobra.Command) ([]map[string]any, error) {
	fl := cmd.Flags()
	var patches []map[string]any
	if file, _ := fl.GetString("config"); file != "" {
		p, err := readPatchFile(file)
		if err != nil {
			return nil, err
		}
		patches = append(patches, p)
	}
	options, _ := fl.GetStringArray("option")
	unsets, _ := fl.GetStringArray("unset")
	changes := make([]optionChange, 0, len(options)+len(unsets))
	for _, o := range options {
		c, err := parseOption(o)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	for _, u := range unsets {
		path, err := optionPath(u)
		if err != nil {
			return nil, fmt.Errorf("--unset %s: %v", u, err)
		}
		changes = append(changes, optionChange{path: path})
	}
	if err := checkOverlap(changes); err != nil {
		return nil, err
	}
	for _, c := range changes {
		patches = append(patches, c.patch())
	}
	if upstream, _ := fl.GetString("upstream"); upstream != "" {
		patches = append(patches, map[string]any{"upstream": upstream})
	}
	return patches, nil
}

// readPatchFile reads --config: a JSON object.
func readPatchFile(file string) (map[string]any, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--config: %v", err)
	}
	var p map[string]any
	if err := decodeJSON(raw, &p); err != nil || p == nil {
		return nil, fmt.Errorf("--config: %s is not a JSON object of school_gateway options", file)
	}
	return p, nil
}

// parseOption reads name=value. The value is JSON when it reads as JSON
// (30, true, {"events": 5}, "quoted", null), else the string as written
// (30s, http://10.0.0.5:9080): an operator writes a duration or a URL
// without quotes, and quotes a string that would read as JSON.
func parseOption(o string) (optionChange, error) {
	name, raw, found := strings.Cut(o, "=")
	if !found {
		return optionChange{}, fmt.Errorf("--option %s: write name=value (remove an option with --unset name)", o)
	}
	path, err := optionPath(name)
	if err != nil {
		return optionChange{}, fmt.Errorf("--option %s: %v", o, err)
	}
	if raw == "" {
		return optionChange{}, fmt.Errorf("--option %s: give a value, or remove the option with --unset %s", o, name)
	}
	var value any = raw
	if json.Valid([]byte(raw)) {
		if err := decodeJSON([]byte(raw), &value); err != nil {
			return optionChange{}, fmt.Errorf("--option %s: %v", o, err)
		}
	}
	return optionChange{path: path, value: value}, nil
}

// optionPath splits an option's name at its dots: a path into the
// options' objects.
func optionPath(name string) ([]string, error) {
	path := strings.Split(name, ".")
	if slices.Contains(path, "") {
		return nil, errors.New(`name an option: a school_gateway option's JSON name, or a.b for b inside the object a`)
	}
	return path, nil
}

// checkOverlap refuses two changes of one option, or of an option and
// something inside it: which applies last would be the flags' order, and
// the order of --option and --unset among each other is not kept.
func checkOverlap(changes []optionChange) error {
	for i, a := range changes {
		for _, b := range changes[i+1:] {
			n := min(len(a.path), len(b.path))
			if slices.Equal(a.path[:n], b.path[:n]) {
				return fmt.Errorf("%s and %s are changed both: name each option once", a.name(), b.name())
			}
		}
	}
	return nil
}

func (c optionChange) name() string { return strings.Join(c.path, ".") }

// patch is the change as a merge patch: {"a": {"b": value}}.
func (c optionChange) patch() map[string]any {
	var v any = c.value
	for i := len(c.path) - 1; i > 0; i-- {
		v = map[string]any{c.path[i]: v}
	}
	return map[string]any{c.path[0]: v}
}

// mergePatch applies a JSON merge patch to target (RFC 7396, section 2):
// an object merges member by member, null removing the member; anything
// else replaces the target. target is changed in place where it is an
// object.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for name, value := range p {
		if value == nil {
			delete(t, name)
			continue
		}
		t[name] = mergePatch(t[name], value)
	}
	return t
}

// PatchConfig applies the patches in order to a record's options (nil:
// a record that has none yet), and says whether anything changed.
func PatchConfig(current json.RawMessage, patches []map[string]any) (json.RawMessage, bool, error) {
	var cfg any = map[string]any{}
	if len(current) > 0 {
		if err := decodeJSON(current, &cfg); err != nil {
			return nil, false, fmt.Errorf("reading the school's options: %v", err)
		}
	}
	before, err := json.Marshal(cfg)
	if err != nil {
		return nil, false, err
	}
	for _, p := range patches {
		cfg = mergePatch(cfg, p)
	}
	after, err := json.Marshal(cfg)
	if err != nil {
		return nil, false, err
	}
	return after, !bytes.Equal(before, after), nil
}

// decodeJSON reads JSON keeping numbers as written, so that a large
// integer or a decimal option is written back as it was.
func decodeJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}
