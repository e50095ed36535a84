package platform

import "github.com/schoolgate/schoolgate/registry"

// A school is one store. Two platforms of a config may each have a record
// of one issuer (two registries, or one registry written two ways), and
// each would serve the school from its own store. So one serves it: the
// platform ranked first with an enabled record of the issuer; the others'
// records fail, from the moment both are known, and are made again
// whenever a change of either moves the claim. The ranking, not who came
// first, decides, so that every start of a config and every instance of
// it decide alike. A claim is an enabled record: a disabled one serves
// nothing.

// Claimant is the platform of ranked, before self, whose table (nil: not
// read yet) has an enabled record of issuer; the zero P if none does.
func Claimant[P comparable, S Entry](ranked []P, self P, table func(P) *Table[S], issuer string) P {
	var none P
	var zero S
	for _, q := range ranked {
		if q == self {
			return none
		}
		if t := table(q); t != nil {
			if e := t.School(issuer); e != zero && !e.Record().Disabled {
				return q
			}
		}
	}
	return none
}

// Renew makes, in a copy of t, a new school of the same record for each
// enabled school of issuers that stale reports (its claim moved: another
// platform serves its issuer now, or none does any more). Next is nil if
// none is stale; the caller serves Next, then retires Retired.
func Renew[S Watched](t *Table[S], issuers []string, stale func(S) bool, newSchool func(*registry.Record) S) Change[S] {
	var zero S
	var c Change[S]
	for _, issuer := range issuers {
		old := t.School(issuer)
		if old == zero || old.Record().Disabled || !stale(old) {
			continue
		}
		if c.Next == nil {
			c.Next = t.Clone()
		}
		c.Next.Remove(old)
		c.Next.Add(newSchool(old.Record()))
		c.Retired = append(c.Retired, old)
	}
	return c
}
