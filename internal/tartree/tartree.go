// Package tartree walks directory trees on the host and writes them as tar
// streams, the form in which files are copied into a sandbox or sent to an
// engine as a build context.
package tartree

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WalkFunc is called for each entry of a tree walk with the entry's
// slash-separated path relative to the root.
type WalkFunc func(rel string, d fs.DirEntry, full string) error

// Walker walks the tree under root, calling fn for each entry it keeps.
type Walker func(root string, fn WalkFunc) error

// Walk calls fn for every directory, regular file and symlink under root
// (not root itself), in lexical order, with its slash-separated path
// relative to root. Other kinds of files (sockets, devices) are skipped: they
// cannot be part of a build context or a copy.
func Walk(root string, fn WalkFunc) error {
	return filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if full == root {
			return nil
		}
		t := d.Type()
		if !t.IsDir() && !t.IsRegular() && t&fs.ModeSymlink == 0 {
			return nil
		}
		rel, err := filepath.Rel(root, full)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), d, full)
	})
}

// Write writes the tree under root as a tar stream: owner root, the files'
// own modes and times, symlinks as links.
func Write(w io.Writer, root string) error { return WriteUnder(w, root, "", Walk) }

// WriteUnder writes what walk visits under root as a tar stream, like Write.
// A non-empty prefix places every entry under that directory, which the
// stream itself creates first (mode 0755).
func WriteUnder(w io.Writer, root, prefix string, walk Walker) error {
	tw := tar.NewWriter(w)
	if prefix != "" {
		hdr := &tar.Header{Name: prefix + "/", Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		prefix += "/"
	}
	err := walk(root, func(rel string, d fs.DirEntry, full string) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(full); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = prefix + rel
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(full)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, info.Size())
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
