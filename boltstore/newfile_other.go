//go:build !linux

package boltstore

import (
	"errors"
	"os"
	"time"
)

// lockedNewFile refuses: here a new store file is made in place, as bbolt
// makes it (newfile.go).
func lockedNewFile(string, time.Duration) (*os.File, error) { return nil, errors.ErrUnsupported }

func newImage() []byte { return nil }

// linksUnsupported is never asked here: no file is made aside.
func linksUnsupported(error) bool { return false }

// Making is false here: files are made in place.
func Making(string) bool { return false }
