package demoschool

import "encoding/json"

// The catalog feed may carry fields this server does not know (the contract
// says unknown fields are kept and shown). Typed structs would drop them when
// /catalog.json is re-encoded after an admin edit, so each catalog type keeps
// them in an Extra map through these two helpers.

// decodeWithExtra decodes data into known (a pointer to a struct without
// custom JSON methods) and returns the object's remaining members.
func decodeWithExtra(data []byte, known any) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(data, known); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var seen map[string]json.RawMessage
	b, err := json.Marshal(known)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &seen); err != nil {
		return nil, err
	}
	for k := range seen {
		delete(all, k)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// encodeWithExtra encodes known and adds the extra members it does not
// already have; known fields win so an edit cannot be undone by a stale
// extra of the same name.
func encodeWithExtra(known any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(b, &merged); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, ok := merged[k]; !ok {
			merged[k] = v
		}
	}
	return json.Marshal(merged)
}
