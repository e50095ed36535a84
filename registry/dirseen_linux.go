package registry

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A write must judge its hosts and version against what other processes
// wrote, which a listing of the whole directory would find at a cost of
// a stat per file. Instead, a Dir keeps an inotify instance of its own
// on the directory, read without waiting under the directory's lock:
// another writer's rename, removal or write queues its event before that
// writer lets the lock go, so an empty queue (once this Dir's own writes'
// events are read) says the directory is as last read, and only a
// non-empty one, or an overflow, costs the listing. The file
// notifications that serve the watchers are another instance
// (dirwatch.go), which this one never disturbs.

// seenMask is every change to a school's file, and to the directory.
const seenMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// dirSeen tells whether a directory changed since it was last asked.
type dirSeen struct{ fd int }

// localFileSystems are the file systems whose every change to a
// directory inotify reports, by statfs's magic number: ext2/3/4, XFS,
// Btrfs, tmpfs, ZFS, F2FS, overlayfs. A network file system tells this
// machine nothing of another machine's writes.
var localFileSystems = map[int64]bool{0xEF53: true, 0x58465342: true, 0x9123683E: true, 0x01021994: true,
	0x2FC12FC1: true, 0xF2F52010: true, 0x794C7630: true}

// newDirSeen watches dir; nil when it cannot, or when dir is on a file
// system not known to be local: a write then lists the directory every
// time.
func newDirSeen(dir string) *dirSeen {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil || !localFileSystems[int64(st.Type)] {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, dir, seenMask); err != nil {
		unix.Close(fd)
		return nil
	}
	return &dirSeen{fd: fd}
}

// changed reads the events queued and reports whether one is of a file
// other than ours ("" for none: any event counts), or an overflow.
func (s *dirSeen) changed(ours string) bool {
	var buf [64 << 10]byte
	other := false
	for {
		n, err := unix.Read(s.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			// EAGAIN: the queue is empty. Anything else: the instance
			// is broken, and every write lists the directory.
			return other || err != unix.EAGAIN
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			file := strings.TrimRight(string(name), "\x00")
			if isSnapshot(file) {
				continue // no school's file: the snapshot's write
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 || ours == "" || !isOurs(file, ours) {
				other = true
			}
		}
	}
}

// isOurs reports whether file is the school's file ours or a temporary
// file of its write (writeFile's "."+ours+".*.tmp").
func isOurs(file, ours string) bool {
	return file == ours || (strings.HasPrefix(file, "."+ours+".") && strings.HasSuffix(file, ".tmp"))
}

func (s *dirSeen) close() { unix.Close(s.fd) }
