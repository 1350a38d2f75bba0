package faults_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// errorsPart is what a CLI printed from its first error on (its plan and progress left out).
func errorsPart(out string) string {
	if i := strings.Index(out, "Error: "); i >= 0 {
		return out[max(0, strings.LastIndexByte(out[:i], '\n')):]
	}
	return out[max(0, len(out)-2000):]
}

// firstError is the summary line of the first error a CLI printed ("" when none).
func firstError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(line, "│ ╷"), "Error: "); ok {
			return rest
		}
	}
	return ""
}

// objects are the test's objects, by kind and name ("pv/NAME", "class/NAME"), each with the value
// of its roundLabel.
type objects map[string]string

// stateObjects returns the objects the workspace's state records.
func stateObjects(t *testing.T, w *acctest.Workspace) objects {
	t.Helper()
	out, err := w.Exec(t, "show", "-json")
	if err != nil {
		t.Fatalf("show -json: %v\n%s", err, out)
	}
	start := strings.IndexByte(out, '{')
	if start < 0 {
		return objects{}
	}
	var doc struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Type   string         `json:"type"`
					Values map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out[start:]), &doc); err != nil {
		t.Fatalf("show -json: %v\n%s", err, out)
	}
	found := objects{}
	for _, r := range doc.Values.RootModule.Resources {
		kind := kindOf(r.Type)
		if kind == "backend" {
			found[kind+"/"+fmt.Sprint(r.Values["release_name"])] = ""
			continue
		}
		labels, _ := r.Values["labels"].(map[string]any) //nolint:errcheck // no labels: no round
		found[kind+"/"+fmt.Sprint(r.Values["name"])] = fmt.Sprint(labels[roundLabel])
	}
	return found
}

func kindOf(resourceType string) string {
	switch resourceType {
	case "clusterstorage_local_pv":
		return "pv"
	case "clusterstorage_storage_class":
		return "class"
	case "clusterstorage_storage_backend":
		return "backend"
	}
	return resourceType
}

// clusterObjects returns the PersistentVolumes and StorageClasses whose names start with prefix.
// The API server may be coming back from a fault: it is polled.
func clusterObjects(t *testing.T, client kubernetes.Interface, prefix string) objects {
	t.Helper()
	names := objects{}
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "listing the test's objects", func(ctx context.Context) (bool, string, error) {
		clear(names)
		pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		classes, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, pv := range pvs.Items {
			if strings.HasPrefix(pv.Name, prefix) {
				names["pv/"+pv.Name] = pv.Labels[roundLabel]
			}
		}
		for _, sc := range classes.Items {
			if strings.HasPrefix(sc.Name, prefix) {
				names["class/"+sc.Name] = sc.Labels[roundLabel]
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// kubeClient is the cluster's API.
type kubeClient = kubernetes.Interface

// removeLeftovers deletes what a failed row left on the cluster, so that the rows after it and
// the other packages start from a clean cluster.
func removeLeftovers(t *testing.T, client kubeClient, prefix string) {
	ctx := context.Background()
	for name := range clusterObjects(t, client, prefix) {
		kind, n, _ := strings.Cut(name, "/")
		var err error
		if kind == "pv" {
			err = client.CoreV1().PersistentVolumes().Delete(ctx, n, metav1.DeleteOptions{})
		} else {
			err = client.StorageV1().StorageClasses().Delete(ctx, n, metav1.DeleteOptions{})
		}
		if err != nil && !kube.IsNotFound(err) {
			t.Errorf("removing the leftover %s: %v", name, err)
		}
	}
}

// minus is the objects a has that b has not, sorted.
func minus(a, b objects) []string {
	var out []string
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// differ is the objects both have with different rounds, sorted.
func differ(a, b objects) []string {
	var out []string
	for k, round := range a {
		if other, ok := b[k]; ok && other != round {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// disk reaches the directories of a row's volumes: this machine's file system for the node that
// runs here, the node's own sshd for a machine node.
type disk struct{ node acctest.ClusterNode }

func (d disk) local() bool { return d.node.MachineDir == "" }

// sum is the SHA-256 of the file at path, "" when it cannot be read.
func (d disk) sum(t *testing.T, path string) string {
	t.Helper()
	if d.local() {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	out, _ := d.node.Run(t, `sha256sum "$1" 2>/dev/null | cut -d ' ' -f 1`, path) //nolint:errcheck // "" when unreadable
	return strings.TrimSpace(out)
}

// exists reports whether path exists.
func (d disk) exists(t *testing.T, path string) bool {
	t.Helper()
	if d.local() {
		_, err := os.Stat(path)
		return err == nil
	}
	return d.node.Exists(t, path)
}

// dataFiles is data a user keeps in volume directories: one file of random bytes in each, with
// its SHA-256.
type dataFiles map[string]string

// writeData makes each of dirs with a file of 256 KiB of random bytes in it.
func (d disk) writeData(t *testing.T, dirs []string) dataFiles {
	t.Helper()
	files := dataFiles{}
	for _, dir := range dirs {
		f := filepath.Join(dir, "data")
		if d.local() {
			buf := make([]byte, 256<<10)
			_, _ = rand.Read(buf)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, buf, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			d.node.MustRun(t, `mkdir -p "$1" && head -c 262144 /dev/urandom >"$1/data"`, dir)
		}
		if files[f] = d.sum(t, f); files[f] == "" {
			t.Fatalf("%s was not written", f)
		}
	}
	return files
}

// lost counts the files that are gone or changed.
func (d disk) lost(t *testing.T, files dataFiles) int {
	t.Helper()
	n := 0
	for f, want := range files {
		if d.sum(t, f) != want {
			n++
		}
	}
	return n
}

// row is one line of the fault matrix.
type row struct {
	Fault, During, Apply string
	// Untracked are the objects the faulted run made that no state recorded (the next run must
	// take them over).
	Untracked    int
	Survived     bool
	Leaked, Lost int
	Why          string
}

// report appends r, tab-separated, to the file FAULTS_REPORT names (scripts/faults.sh prints the
// matrix from it) and logs it.
func report(t *testing.T, r row) {
	t.Helper()
	clean := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	line := strings.Join([]string{clean(r.Fault), clean(r.During), clean(r.Apply), strconv.Itoa(r.Untracked), strconv.FormatBool(r.Survived),
		strconv.Itoa(r.Leaked), strconv.Itoa(r.Lost), clean(r.Why)}, "\t")
	t.Logf("matrix row: %s", line)
	path := os.Getenv("FAULTS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(line + "\n")
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}
