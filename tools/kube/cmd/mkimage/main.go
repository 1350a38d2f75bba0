// Command mkimage packs a root file system directory into a single-layer
// image in the docker-archive format ("docker save"), which
// `ctr images import` reads. The local cluster builds every image it runs
// this way, so nothing is ever pulled.
//
// The layer is reproducible: entries are sorted, owned by root and carry a
// fixed modification time, so the same input gives the same image ID.
//
//	mkimage -rootfs DIR -tag localhost/x/y:1 -o out.tar [-entrypoint /a,b] [-cmd c,d] [-env K=V,...]
package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every layer entry and the image's
// creation time: a fixed value keeps the image ID stable between builds.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	rootfs := flag.String("rootfs", "", "directory holding the image's root file system")
	tag := flag.String("tag", "", "image reference, e.g. localhost/clusterstorage/pause:3.10")
	out := flag.String("o", "", "output docker-archive tar")
	entrypoint := flag.String("entrypoint", "", "comma-separated entrypoint")
	cmd := flag.String("cmd", "", "comma-separated default command")
	env := flag.String("env", defaultPath, "comma-separated environment")
	flag.Parse()
	if *rootfs == "" || *tag == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*rootfs, *tag, *out, split(*entrypoint), split(*cmd), split(*env)); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// build writes the layer to a temporary file first: its digest is needed
// for the config, and the config's digest names the image in the archive.
func build(rootfs, tag, out string, entrypoint, cmd, env []string) error {
	layer, err := os.CreateTemp(filepath.Dir(out), ".layer-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	h := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, h), rootfs); err != nil {
		return fmt.Errorf("layer from %s: %w", rootfs, err)
	}
	diffID := "sha256:" + hex.EncodeToString(h.Sum(nil))
	size, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}

	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Env":        env,
			"Entrypoint": entrypoint,
			"Cmd":        cmd,
			"WorkingDir": "/",
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "mkimage " + tag}},
	})
	if err != nil {
		return err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := strings.TrimPrefix(diffID, "sha256:") + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{tag},
		"Layers":   []string{layerName},
	}})
	if err != nil {
		return err
	}

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := addBytes(tw, configName, config); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: filepath.Dir(layerName) + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: layerName, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch}); err != nil {
		return err
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(tw, layer); err != nil {
		return err
	}
	if err := addBytes(tw, "manifest.json", manifest); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func addBytes(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// writeLayer tars rootfs in sorted order with root ownership. Hard links
// are stored as hard links so that a busybox tree does not grow per applet.
func writeLayer(w io.Writer, rootfs string) error {
	var paths []string
	err := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != rootfs {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	seen := map[[2]uint64]string{} // (dev, inode) -> first name, for hard links
	for _, p := range paths {
		rel, err := filepath.Rel(rootfs, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if key, ok := inodeKey(fi); ok && fi.Mode().IsRegular() {
			if first, dup := seen[key]; dup {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				seen[key] = hdr.Name
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := copyFile(tw, p); err != nil {
				return err
			}
		}
	}
	if len(paths) == 0 {
		return errors.New("empty root file system")
	}
	return tw.Close()
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
