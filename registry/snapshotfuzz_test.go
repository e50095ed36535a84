package registry

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"
)

// FuzzDecodeSnapshot feeds the snapshot's reader damaged bodies that carry
// a right checksum (a file cut short or rewritten by another program
// fails the checksum first; this reaches the parser behind it): it
// refuses them or reads entries, never panics.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot("exe", nil)[len(snapshotMagic) : len(encodeSnapshot("exe", nil))-4])
	rec := &dirFile{stat: fileStat{size: 3, mtime: time.Unix(1, 2).UnixNano(), id: 7}}
	good := encodeSnapshot("exe", []snapshotEntry{{name: "a.example.json", f: rec}})
	f.Add(good[len(snapshotMagic) : len(good)-4])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, body []byte) {
		data := append([]byte(snapshotMagic), body...)
		data = binary.LittleEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
		_, files, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		for _, e := range files {
			if e.f == nil {
				t.Fatalf("entry %q without its state", e.name)
			}
		}
	})
}
