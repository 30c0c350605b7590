package site

import "io/fs"

// FilesOnly returns fsys without its directories: opening one fails with
// fs.ErrNotExist, so a file server over it answers 404 for /web/ or any
// folder instead of listing the files in it (nor does it serve a
// folder's index.html in its place).
func FilesOnly(fsys fs.FS) fs.FS { return filesOnly{fsys} }

type filesOnly struct{ fsys fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}
