package registry

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"
)

// Opening a directory of 100,000 files costs a listing and, for each
// file, an open, a read, a close and a decode: seconds of processor, most
// of it system calls, and tens of seconds on a busy machine. A Dir
// therefore keeps a snapshot beside the files: one file holding every
// school file's record as served and the file's size, modification time
// and identity when it was read. An opening reads the snapshot in one
// read and serves its records at once, then compares the directory with
// it in the background (run): a file changed, added or removed while no
// Dir ran has another stat than the snapshot's, and is read, so the files
// always win. A snapshot that is missing, damaged (its checksum) or of
// another format is ignored: the files are read as without one.
//
// The snapshot is written after changes, in the background, no more
// often than the poll compares the directory (pollShare: at most 1% of a
// processor), and when the Dir is closed; a temporary file renamed into
// place, so that a reader finds the old snapshot or the new one. It is
// a cache, never the truth: any snapshot a Dir wrote holds pairs of a
// file's stat and what that file held, so an old one only costs the
// reading of the files changed since.
//
// The records of a snapshot were checked by the Validator of the process
// that wrote it. A process of another executable (an upgrade, whose rules
// may differ) serves them at once too, but reads every file again in the
// background, checking each with its own rules.

// snapshotName is the snapshot's file in the directory: starting with
// ".", it is no school's file.
const snapshotName = ".schoolgate-registry.snapshot"

// snapshotMagic starts a snapshot: its format, version 1.
const snapshotMagic = "schoolgate registry snapshot 1\n"

// isSnapshot reports whether a directory entry is the snapshot or a
// temporary file of its write.
func isSnapshot(name string) bool { return strings.HasPrefix(name, snapshotName) }

// executable names the running executable (its path, size and
// modification time): a snapshot written by another one is checked
// again. A variable so tests can play an upgrade.
var executable = func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	info, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano())
}

// snapshotEntry is one school file in a snapshot.
type snapshotEntry struct {
	name string
	f    *dirFile
}

// encodeSnapshot is the snapshot of files (each valid), for the
// executable exe: the magic, exe, the count, the entries, then the
// CRC-32C of all that.
func encodeSnapshot(exe string, files []snapshotEntry) []byte {
	var b bytes.Buffer
	_ = writeSnapshot(&b, exe, files) // a bytes.Buffer does not fail
	return b.Bytes()
}

// writeSnapshot writes encodeSnapshot's bytes to w an entry at a time:
// the snapshot of 100,000 schools is tens of megabytes, which a buffer
// of its size would hold (and the kernel zero, page by page) at every
// writing, for a file written in the background.
func writeSnapshot(w io.Writer, exe string, files []snapshotEntry) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	b := make([]byte, 0, 4<<10)
	b = append(b, snapshotMagic...)
	b = appendString(b, exe)
	b = binary.AppendUvarint(b, uint64(len(files)))
	for _, e := range files {
		st, r := &e.f.stat, &e.f.rec
		b = appendString(b, e.name)
		b = binary.AppendVarint(b, st.size)
		b = binary.AppendVarint(b, st.mtime)
		b = binary.AppendUvarint(b, st.id)
		b = appendString(b, r.Issuer)
		b = binary.AppendUvarint(b, uint64(len(r.Hosts)))
		for _, h := range r.Hosts {
			b = appendString(b, h)
		}
		flags := byte(0)
		if r.Disabled {
			flags = 1
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(len(r.Config)))
		if _, err := bw.Write(b); err != nil {
			return err
		}
		if _, err := bw.Write(r.Config); err != nil {
			return err
		}
		b = binary.AppendVarint(b[:0], r.Version)
		b = appendTime(b, r.UpdatedAt)
	}
	if _, err := bw.Write(b); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime appends t in seconds and nanoseconds, in UTC: any time a
// file may hold, not only those UnixNano can.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// errSnapshot is a snapshot that cannot be read.
var errSnapshot = errors.New("damaged")

// snapshotReader reads a snapshot's fields. Its strings and
// configurations share the snapshot's one buffer, which is never written
// again: the records read hold no copy of their own.
type snapshotReader struct {
	data []byte
	s    string // data as a string, for the strings
	off  int
	err  error
}

// fail marks the snapshot damaged: every later read returns nothing.
func (r *snapshotReader) fail() {
	r.err = errSnapshot
	r.off = len(r.data)
}

func (r *snapshotReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.data[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

func (r *snapshotReader) varint() int64 {
	v, n := binary.Varint(r.data[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

// span is the next length-prefixed field's bounds.
func (r *snapshotReader) span() (int, int) {
	n := r.uvarint()
	if n > uint64(len(r.data)-r.off) {
		r.fail()
		return r.off, r.off
	}
	start := r.off
	r.off += int(n)
	return start, r.off
}

func (r *snapshotReader) str() string {
	i, j := r.span()
	return r.s[i:j]
}

func (r *snapshotReader) bytes() []byte {
	i, j := r.span()
	return r.data[i:j:j]
}

func (r *snapshotReader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 {
		r.err = errSnapshot
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (r *snapshotReader) byte() byte {
	if r.off >= len(r.data) {
		r.err = errSnapshot
		return 0
	}
	r.off++
	return r.data[r.off-1]
}

// decodeSnapshot reads a snapshot: the executable that wrote it and its
// entries, or errSnapshot.
func decodeSnapshot(data []byte) (exe string, files []snapshotEntry, err error) {
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return "", nil, errSnapshot
	}
	body := data[:len(data)-4]
	if binary.LittleEndian.Uint32(data[len(body):]) != crc32.Checksum(body, castagnoli) {
		return "", nil, errSnapshot
	}
	r := &snapshotReader{data: body, s: unsafe.String(unsafe.SliceData(body), len(body)), off: len(snapshotMagic)}
	exe = r.str()
	n := r.uvarint()
	if n > uint64(len(body)) { // each entry takes bytes
		return "", nil, errSnapshot
	}
	// One allocation for every file's state: they are replaced, never
	// changed, so the array lives as long as one of them is served.
	all := make([]dirFile, n)
	files = make([]snapshotEntry, 0, n)
	for i := range all {
		f := &all[i]
		name := r.str()
		f.stat.size = r.varint()
		f.stat.mtime = r.varint()
		f.stat.id = r.uvarint()
		f.rec.Issuer = r.str()
		if hosts := r.uvarint(); hosts > 0 {
			if hosts > uint64(len(body)-r.off) {
				return "", nil, errSnapshot
			}
			f.rec.Hosts = make([]string, hosts)
			for j := range f.rec.Hosts {
				f.rec.Hosts[j] = r.str()
			}
		}
		f.rec.Disabled = r.byte() == 1
		f.rec.Config = r.bytes()
		f.rec.Version = r.varint()
		f.rec.UpdatedAt = r.time()
		if r.err != nil {
			return "", nil, r.err
		}
		if !recordFile(name) || strings.ContainsRune(name, filepath.Separator) || f.rec.Version < 0 || f.stat.size < 0 ||
			f.skipped() {
			return "", nil, errSnapshot
		}
		files = append(files, snapshotEntry{name: name, f: f})
	}
	if r.off != len(body) {
		return "", nil, errSnapshot
	}
	return exe, files, nil
}

// loadSnapshot serves the snapshot's records, if the directory has a
// snapshot that can be read; it reports whether it did. A snapshot of
// another executable is served too, its files read again by the
// reconciliation (their stats forgotten). The caller holds d.scan; the
// Dir has read nothing yet.
func (d *Dir) loadSnapshot() bool {
	data, err := os.ReadFile(filepath.Join(d.dir, snapshotName))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("registry: the snapshot cannot be read; the files are read instead", "dir", d.dir, "error", err)
		}
		return false
	}
	exe, files, err := decodeSnapshot(data)
	if err != nil {
		d.log.Warn("registry: the snapshot is damaged; the files are read instead", "file", filepath.Join(d.dir, snapshotName))
		return false
	}
	if exe != executable() && d.validate != nil {
		for _, e := range files {
			e.f.stat = fileStat{} // no file has it: each is read again
		}
	}
	d.loadFiles(files)
	// What is served is what the snapshot holds.
	d.unsaved = false
	select {
	case <-d.saved:
	default:
	}
	return true
}

// loadFiles serves files, the first the Dir reads: setFile and publish
// in bulk, the maps made to size, each host's claims counted once, and
// only the groups of files that claim a host together decided as
// publish decides them; a file none of whose hosts another claims is
// served as it is. The caller holds d.scan.
func (d *Dir) loadFiles(files []snapshotEntry) {
	d.files = make(map[string]*dirFile, len(files))
	d.claimants = newHostClaims(&d.files)
	// The keys of each file in buf's array while they fit: no garbage
	// of 100,000 lists of keys.
	var buf [4]string
	keys := func(r *Record) []string { return r.AppendHostKeys(buf[:0]) }
	for _, e := range files {
		d.files[e.name] = e.f
		for _, h := range keys(&e.f.rec) {
			d.claimants.add(h, e.name)
		}
	}
	d.mu.Lock()
	d.records = make(map[string]*Record, len(files))
	for _, e := range files {
		alone := true
		for _, h := range keys(&e.f.rec) {
			alone = alone && d.claimants.count(h) == 1
		}
		if !alone {
			for _, h := range keys(&e.f.rec) {
				d.dirty[h] = true
			}
			continue
		}
		d.records[e.f.rec.Issuer] = &e.f.rec
	}
	d.mu.Unlock()
	d.publish()
}

// snapshotFiles is the files to snapshot: the valid ones, as read. The
// caller holds d.scan.
func (d *Dir) snapshotFiles() []snapshotEntry {
	files := make([]snapshotEntry, 0, len(d.files))
	for name, f := range d.files {
		if !f.skipped() {
			files = append(files, snapshotEntry{name: name, f: f})
		}
	}
	return files
}

// saveSnapshot writes the snapshot of the files as they are now, if they
// changed since the last one, and returns how long it took. The files'
// states are never changed once set (setFile replaces them), so they
// are encoded after d.scan is let go of.
func (d *Dir) saveSnapshot() time.Duration {
	d.scan.Lock()
	if !d.unsaved {
		d.scan.Unlock()
		return 0
	}
	start := time.Now()
	d.unsaved = false
	files := d.snapshotFiles()
	d.scan.Unlock()
	tmp, err := os.CreateTemp(d.dir, snapshotName+".*.tmp")
	if err == nil {
		err = writeSnapshot(tmp, executable(), files)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(d.dir, snapshotName))
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		// The next change tries again; meanwhile a start reads the
		// older snapshot and the files changed since.
		d.log.Warn("registry: the snapshot could not be written", "dir", d.dir, "error", err)
	}
	return time.Since(start)
}
