package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A school's file: its encoding, and writing it durably (a temporary
// file synced, renamed in, the directory synced).

// encodeRecord is a school's file.
func encodeRecord(r *Record) ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("registry: encoding the record of %s: %w", r.Issuer, err)
	}
	return append(data, '\n'), nil
}

// decodeRecord reads a school's file, refusing fields the Record does not
// have (a misspelt "host" would otherwise be dropped in silence) and
// anything after the object.
func decodeRecord(data []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("not a school record: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("not a school record: more follows the object")
	}
	return r, nil
}

// writeFile replaces name in dir with data atomically: a reader finds
// the old file or the new one, and after a crash the directory holds one
// of them.
func writeFile(dir, name string, data []byte) (fileStat, error) {
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: writing %s: %w", name, err)
	}
	if err := syncDir(dir); err != nil {
		return fileStat{}, err
	}
	info, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return fileStat{}, fmt.Errorf("registry: %w", err)
	}
	return statOf(info), nil
}

// syncDir makes a rename or a removal in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("registry: syncing %s: %w", dir, err)
	}
	return nil
}

func statOf(info fs.FileInfo) fileStat {
	return fileStat{size: info.Size(), mtime: info.ModTime().UnixNano(), id: fileID(info)}
}
