package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// readTar returns the regular files of a tar archive by name.
func readTar(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files, headers := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, headers
		}
		if err != nil {
			t.Fatal(err)
		}
		headers[hdr.Name] = hdr
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = data
	}
}

func TestBuild(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", "sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(rootfs, "bin", "busybox"), filepath.Join(rootfs, "bin", "cat")); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "image.tar")
	const tag = "localhost/clusterstorage/test:1"
	if err := build(rootfs, tag, out, []string{"/bin/sh"}, []string{"-c", "true"}, []string{defaultPath}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := readTar(t, f)

	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != tag || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest = %+v", manifest)
	}
	config := files[manifest[0].Config]
	sum := sha256.Sum256(config)
	if manifest[0].Config != hex.EncodeToString(sum[:])+".json" {
		t.Errorf("config name %s is not its digest", manifest[0].Config)
	}
	var cfg struct {
		Architecture, OS string
		Config           struct{ Entrypoint, Cmd, Env []string }
		RootFS           struct {
			Type    string
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	layer := files[manifest[0].Layers[0]]
	layerSum := sha256.Sum256(layer)
	if want := "sha256:" + hex.EncodeToString(layerSum[:]); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != want {
		t.Errorf("diff_ids = %v, want [%s]", cfg.RootFS.DiffIDs, want)
	}
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || cfg.Config.Entrypoint[0] != "/bin/sh" || cfg.Config.Cmd[1] != "true" {
		t.Errorf("config = %+v", cfg)
	}

	entries, headers := readTar(t, bytes.NewReader(layer))
	if string(entries["bin/busybox"]) != "#!/bin/true\n" {
		t.Errorf("bin/busybox = %q", entries["bin/busybox"])
	}
	if h := headers["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
		t.Errorf("bin/sh = %+v, want a symlink to busybox", h)
	}
	if h := headers["bin/cat"]; h == nil || h.Typeflag != tar.TypeLink {
		t.Errorf("bin/cat = %+v, want a hard link", h)
	}
	for name, h := range headers {
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d mtime %v, want root and %v", name, h.Uid, h.Gid, h.ModTime, epoch)
		}
	}

	// The same input gives the same image.
	again := filepath.Join(t.TempDir(), "again.tar")
	if err := build(rootfs, tag, again, []string{"/bin/sh"}, []string{"-c", "true"}, []string{defaultPath}); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same root file system differ")
	}
}

func TestBuildEmptyRootfs(t *testing.T) {
	err := build(t.TempDir(), "localhost/x:1", filepath.Join(t.TempDir(), "x.tar"), nil, nil, nil)
	if err == nil {
		t.Fatal("want an error for an empty root file system")
	}
}
