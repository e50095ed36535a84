package registry

// PollEvery and PollOnly let tests shorten the poll of a Dir and turn
// its file notifications off.
var (
	PollEvery = &pollEvery
	PollOnly  = &pollOnly
)

// Poll compares the directory with what was read, as the poll does.
func (d *Dir) Poll() { d.refresh(nil) }

// Owner is the issuer served on the host key h, "" if none, as Put
// judges a host taken.
func (d *Dir) Owner(h string) string {
	d.scan.Lock()
	defer d.scan.Unlock()
	return d.owner(h)
}

// Executable names the running executable for snapshots; SnapshotName
// is the snapshot's file.
var (
	Executable   = &executable
	SnapshotName = snapshotName
)
