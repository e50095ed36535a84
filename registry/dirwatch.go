package registry

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// pollShare bounds the poll's cost: the pause after a comparison of the
// whole directory is at least pollShare times what it took. Comparing
// 10,000 files (a listing and a stat each) takes about 50 ms on a small
// virtual machine, which would be 5% of a processor every second; so the
// poll of a directory that large comes every 5 seconds, while one of up
// to about 2,000 files comes every second.
const pollShare = 100

// run follows the directory until Close: the files that notifications
// name are read once they settle, and the whole directory is compared
// with what was read every pollEvery, or less often when that takes
// long (pollShare), which finds what notifications missed (an overflow,
// a file system without them, a watch that failed). w is nil when the
// directory could not be watched.
func (d *Dir) run(w *fsnotify.Watcher) {
	defer close(d.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	poll := time.NewTimer(d.pollEvery)
	defer poll.Stop()
	// Served from the snapshot, the first poll (a second after the
	// opening, once the server has read what it serves) compares the
	// files with it: those changed meanwhile win.
	//
	// The snapshot is written a while after a change, so that a burst
	// of changes is written once, and no more often than the poll runs.
	snapshotEvery := d.pollEvery
	var snapshot <-chan time.Time
	named := map[string]bool{}
	var settled <-chan time.Time
	for {
		select {
		case <-d.stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if name := filepath.Base(ev.Name); recordFile(name) {
				named[name] = true
				if settled == nil {
					settled = time.After(settle)
				}
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				d.log.Warn("registry: watching the directory failed; polling it finds the changes", "dir", d.dir, "error", err)
			}
			d.refresh(nil)
		case <-settled:
			settled = nil
			d.refresh(named)
			named = map[string]bool{}
		case <-poll.C:
			took := d.refresh(nil)
			poll.Reset(max(d.pollEvery, pollShare*took))
		case <-d.saved:
			if snapshot == nil {
				snapshot = time.After(snapshotEvery)
			}
		case <-snapshot:
			snapshot = nil
			snapshotEvery = max(d.pollEvery, pollShare*d.saveSnapshot())
		}
	}
}

// refresh reads the files named, or the whole directory if none are, and
// tells the watchers what changed. A directory that cannot be read keeps
// its schools served as last read, with a warning once per failure. It
// returns how long the reading took.
func (d *Dir) refresh(names map[string]bool) time.Duration {
	d.scan.Lock()
	start := time.Now()
	var changed []string
	if len(names) > 0 {
		changed = d.readNames(names)
	} else {
		var err error
		changed, err = d.readAll(nil)
		if err != nil && err.Error() != d.dirErr {
			d.log.Warn("registry: the directory cannot be read; its schools are served as last read", "dir", d.dir, "error", err)
		}
		if err != nil {
			d.dirErr = err.Error()
		} else {
			d.dirErr = ""
		}
	}
	took := time.Since(start)
	d.scan.Unlock()
	d.announce(changed)
	return took
}
