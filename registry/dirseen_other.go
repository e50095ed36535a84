//go:build !linux

package registry

// dirSeen has no notifications to read here: every write lists the
// directory (dirseen_linux.go).
type dirSeen struct{}

func newDirSeen(string) *dirSeen       { return nil }
func (s *dirSeen) changed(string) bool { return true }
func (s *dirSeen) close()              {}
