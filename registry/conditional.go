package registry

import (
	"context"
	"errors"
	"fmt"
)

// Conditional is a Registry that writes on condition of the stored
// record's version, checked in the write itself (under Dir's lock on the
// directory, in the database's transaction): of two operators who read
// one version of a school, the second one's write is refused, through
// whichever instance each wrote. Memory, Dir and the PostgreSQL registry
// implement it.
type Conditional interface {
	// PutIf is Put, refused with a *VersionError unless the stored
	// record of r.Issuer has version; version 0 asks that there be none.
	PutIf(ctx context.Context, r Record, version int64) (Record, error)
	// RemoveIf is Remove, refused with a *VersionError unless the
	// stored record has version (ErrNotFound when there is none).
	RemoveIf(ctx context.Context, issuer string, version int64) error
}

// ErrVersionChanged: the record was written since the version the
// condition names.
var ErrVersionChanged = errors.New("the school's record is not at the version expected")

// VersionError says which version a conditional write expected and what
// was stored.
type VersionError struct {
	Issuer string
	// Want is the condition's version, Stored the record's; Exists is
	// false when there is no record.
	Want, Stored int64
	Exists       bool
}

func (e *VersionError) Error() string {
	switch {
	case !e.Exists:
		return fmt.Sprintf("%s has no record (it was removed); version %d was expected", e.Issuer, e.Want)
	case e.Want == 0:
		return fmt.Sprintf("%s exists already (version %d)", e.Issuer, e.Stored)
	}
	return fmt.Sprintf("%s is at version %d, not %d: it was written since", e.Issuer, e.Stored, e.Want)
}

// Is makes a VersionError an ErrVersionChanged.
func (e *VersionError) Is(target error) bool { return target == ErrVersionChanged }

// checkVersion is the condition: the record is at version, or version
// is 0 and there is none. A record of version 0 (a Dir file written by
// hand, which counts no writes) matches no condition.
func checkVersion(issuer string, version, stored int64, exists bool) error {
	if (exists && version > 0 && version == stored) || (!exists && version == 0) {
		return nil
	}
	return &VersionError{Issuer: issuer, Want: version, Stored: stored, Exists: exists}
}
