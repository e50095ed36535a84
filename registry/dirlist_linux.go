package registry

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The poll compares a directory of 100,000 files with what was read,
// every second or, for a large directory, a hundred times as long as a
// comparison takes. os.ReadDir and a FileInfo a file made some 35 MB of
// garbage a comparison, which the collector let the heap keep: an idle
// platform held twice its live heap from its first poll on. Here the
// entries are read into one buffer and each file's stat into one
// Stat_t, and a name is looked up where it lies in the buffer: a
// comparison that finds nothing changed allocates a copy of each name
// for the stat's system call, little more.

// Where a linux_dirent64's record length and name are.
const (
	direntReclen = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	direntName   = int(unsafe.Offsetof(unix.Dirent{}.Name))
)

// listDir calls fn for each regular file of dir (symbolic links
// followed) whose name is a school file's, with its stat. The name is
// valid during the call only: fn copies what it keeps.
func listDir(dir string, fn func(name string, st fileStat)) error {
	fd, err := openDirFD(dir)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 32<<10)
	var st unix.Stat_t
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+direntReclen:]))
			if reclen <= direntName || off+reclen > n {
				return &fs.PathError{Op: "readdirent", Path: dir, Err: fmt.Errorf("an entry of %d bytes", reclen)}
			}
			raw := buf[off+direntName : off+reclen]
			off += reclen
			if i := bytes.IndexByte(raw, 0); i >= 0 {
				raw = raw[:i]
			}
			if len(raw) == 0 {
				continue
			}
			name := unsafe.String(unsafe.SliceData(raw), len(raw))
			if !recordFile(name) {
				continue
			}
			if unix.Fstatat(fd, name, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue // gone since the listing, a dangling link, a directory
			}
			fn(name, fileStat{size: st.Size, mtime: st.Mtim.Nano(), id: uint64(st.Ino)})
		}
	}
}

func openDirFD(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
