package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"os"
)

// pixelsFile holds a Compact's pixels on disk: an IDX payload as stored,
// read at any offset (os.File.ReadAt: safe for concurrent use). Only the
// pages the system caches for it take memory, and those are the system's
// to reclaim, not the process's.
type pixelsFile struct {
	f    *os.File
	size int64
	// path is the file's name when it could not be removed at once
	// (a system that keeps open files' names): removed at close.
	path string
}

func (p *pixelsFile) read(dst []byte, off int64) error {
	if off < 0 || off+int64(len(dst)) > p.size {
		return fmt.Errorf("pixels file: %d bytes at %d of %d", len(dst), off, p.size)
	}
	if _, err := p.f.ReadAt(dst, off); err != nil {
		return fmt.Errorf("pixels file: %w", err)
	}
	return nil
}

func (p *pixelsFile) close() error {
	err := p.f.Close()
	if p.path != "" {
		err = errors.Join(err, os.Remove(p.path))
	}
	return err
}

// spillIDXFile reads the IDX file at path (raw or gzipped) as
// LoadIDXFile does, writing its payload into a new file of the directory
// scratch instead of memory: it returns the IDX without Data and that
// file.
func spillIDXFile(path, scratch string) (*IDX, *pixelsFile, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: %w", err)
	}
	defer src.Close()
	f, err := os.CreateTemp(scratch, ".pixels-*")
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: %s: scratch file: %w", path, err)
	}
	p := &pixelsFile{f: f}
	if os.Remove(f.Name()) != nil {
		p.path = f.Name()
	}
	w := bufio.NewWriterSize(f, 1<<16)
	x, err := readIDX(src, path, DefaultMaxIDXBytes, -1, nil, w)
	if err == nil {
		if err = w.Flush(); err != nil {
			err = fmt.Errorf("dataset: IDX file %q: writing its payload: %w", path, err)
		}
	}
	if err != nil {
		p.close()
		return nil, nil, err
	}
	n, _ := x.payloadLen() // readIDX checked the dimensions
	p.size = int64(n)
	return x, p, nil
}
