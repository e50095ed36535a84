package mcpserver

import "encoding/json"

// schema is a JSON Schema object. Tool schemas are written out by hand
// rather than reflected from Go types because their descriptions are the
// documentation an agent reads before calling a tool.
type schema = map[string]any

func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// closedObject is an input object that refuses unknown arguments, so a
// misspelt argument is reported instead of silently ignored.
func closedObject(props schema, required ...string) schema {
	s := object(props, required...)
	s["additionalProperties"] = false
	return s
}

func str(description string) schema {
	return schema{"type": "string", "description": description}
}

func arrayOf(items schema, description string) schema {
	return schema{"type": "array", "items": items, "description": description}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// priceSchema describes catalog.Price.
var priceSchema = schema{
	"type":        "object",
	"description": "Price of the item. Absent when the school publishes none.",
	"properties": schema{
		"amount":   schema{"type": "number", "minimum": 0, "description": "Amount in the currency's main unit: 49.5 with EUR means 49.50 euros, not cents. 0 means free."},
		"currency": str("ISO 4217 currency code, e.g. EUR."),
	},
	"required": []string{"amount", "currency"},
}

// urlSchema describes an item's public page.
var urlSchema = str("Public web page of the item on the school's site, where people buy, book or enrol.")
