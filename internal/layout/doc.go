// Package layout has no code of its own: its test holds the module's
// layout, which package may import which, in one table (rules in
// layout_test.go) that every package of the module must have a row of.
// docs/architecture.md says why the rules are what they are.
package layout
