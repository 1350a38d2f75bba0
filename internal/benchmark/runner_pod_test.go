package benchmark

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
)

func testSpec(t *testing.T, runtime time.Duration) fio.Spec {
	t.Helper()
	s, err := fio.Profile("latency")
	if err != nil {
		t.Fatal(err)
	}
	size, engine, direct := "4M", "psync", false
	return s.Apply(fio.Override{Size: &size, Runtime: &runtime, IOEngine: &engine, Direct: &direct})
}

func TestPodSpec(t *testing.T) {
	r := podRun{
		Target:   Target{Kind: TargetStorageClass, Name: "fast", Namespace: "bench", VolumeSize: k8sresource.MustParse("2Gi")},
		Hostname: "node-a", Spec: testSpec(t, time.Second), Image: "example/fio", PullPolicy: "Never", HostNetwork: true, RunID: "0123abcd",
	}
	args, err := fio.Args(r.Spec, "/data/.clusterstorage-benchmark-0123abcd")
	if err != nil {
		t.Fatal(err)
	}
	p := r.pod(args, "/data/.clusterstorage-benchmark-0123abcd", "2026-12-01T10:00:00Z", 300)
	c := r.claim()
	if p.Annotations[AnnotationExpires] != "2026-12-01T10:00:00Z" || *p.Spec.ActiveDeadlineSeconds != 300 {
		t.Errorf("pod expiry: annotations %v, active deadline %d", p.Annotations, *p.Spec.ActiveDeadlineSeconds)
	}
	sc := p.Spec.Containers[0].SecurityContext
	if sc == nil || *sc.AllowPrivilegeEscalation || *sc.Privileged || !*sc.ReadOnlyRootFilesystem ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "DAC_OVERRIDE" {
		t.Errorf("securityContext = %+v", sc)
	}
	for _, meta := range []map[string]string{p.Labels, c.Labels} {
		if meta[LabelRun] != "0123abcd" || meta[labelManagedBy] != managedBy {
			t.Errorf("labels = %v", meta)
		}
	}
	if p.Name != "clusterstorage-benchmark-0123abcd" || c.Name != p.Name || p.Namespace != "bench" || c.Namespace != "bench" {
		t.Errorf("names: pod %s/%s claim %s/%s", p.Namespace, p.Name, c.Namespace, c.Name)
	}
	if *c.Spec.StorageClassName != "fast" || c.Spec.Resources.Requests.Storage().String() != "2Gi" {
		t.Errorf("claim spec = %+v", c.Spec)
	}
	if v := p.Spec.Volumes[0].PersistentVolumeClaim; v == nil || v.ClaimName != c.Name {
		t.Errorf("pod volume = %+v", p.Spec.Volumes)
	}
	ctr := p.Spec.Containers[0]
	if ctr.Image != "example/fio" || ctr.ImagePullPolicy != corev1.PullNever || !p.Spec.HostNetwork || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod spec = %+v", p.Spec)
	}
	if got := ctr.Command[:6]; got[0] != "sh" || got[2] != podScript || got[4] != "/data/.clusterstorage-benchmark-0123abcd" || got[5] != "clusterstorage-benchmark-end-0123abcd" {
		t.Errorf("command = %q", got)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if e := terms[0].MatchExpressions[0]; e.Key != "kubernetes.io/hostname" || e.Values[0] != "node-a" {
		t.Errorf("affinity = %+v", terms)
	}

	// An existing claim: the pod mounts it, and no claim is made.
	r.Target = Target{Kind: TargetClaim, Name: "data", Namespace: "bench"}
	r.Hostname = ""
	p = r.pod(args, "/data/x", "2026-12-01T10:00:00Z", 300)
	if p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data" || p.Spec.Affinity != nil {
		t.Errorf("claim pod = %+v", p.Spec)
	}
}

const testMarker = "clusterstorage-benchmark-end-test"

// runScript runs podScript with the local sh and fio, the way the container runs it, and reads
// its output as the provider reads the pod's log: up to the end line, whose status must be the
// script's own.
func runScript(t *testing.T, dir string, args []string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "sh", append([]string{"-c", podScript, "sh", dir, testMarker}, args...)...)
	raw, err := cmd.CombinedOutput()
	out, status, ok := endLine(bufio.NewReader(bytes.NewReader(raw)), testMarker)
	if !ok {
		t.Fatalf("no end line in the script's output (%v):\n%s", err, raw)
	}
	if status != cmd.ProcessState.ExitCode() {
		t.Errorf("end line status %d, script exit status %d", status, cmd.ProcessState.ExitCode())
	}
	if !bytes.HasSuffix(raw, []byte(fmt.Sprintf("%s %d\n", testMarker, status))) {
		t.Errorf("the end line is not the script's last output:\n%s", raw)
	}
	return out, err
}

func TestEndLine(t *testing.T) {
	for _, tc := range []struct {
		log, out string
		status   int
		ok       bool
	}{
		{log: "{}\nend 0\n", out: "{}\n", ok: true},
		{log: "fio: error\nend 1\n", out: "fio: error\n", status: 1, ok: true},
		{log: "{\"no newline\": 1}end 0\n", out: "{\"no newline\": 1}", ok: true},
		{log: "end 0", out: "", ok: true}, // the stream ended right after it
		{log: "{}\n"},                     // stopped before its end
		{log: "end of something\nend x\n"},
		{log: ""},
	} {
		out, status, ok := endLine(bufio.NewReader(strings.NewReader(tc.log)), "end")
		if string(out) != tc.out || status != tc.status || ok != tc.ok {
			t.Errorf("endLine(%q) = %q, %d, %v; want %q, %d, %v", tc.log, out, status, ok, tc.out, tc.status, tc.ok)
		}
	}
}

func TestPodScriptRunsFioAndRemovesItsDirectory(t *testing.T) {
	testenv.LookPath(t, "fio")
	volume := t.TempDir()
	keep := filepath.Join(volume, "existing-data")
	if err := os.WriteFile(keep, []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(volume, runDirPrefix+"test")
	spec := testSpec(t, time.Second)
	args, err := fio.Args(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, dir, args)
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	res, err := fio.Parse(out)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	if res.Read.IOPS <= 0 || res.Write.IOPS <= 0 {
		t.Errorf("no I/O: %s", fio.Summary(res))
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory still there: %v", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "not ours" {
		t.Errorf("existing data touched: %q %v", b, err)
	}
}

func TestPodScriptFioErrorKeepsMessage(t *testing.T) {
	testenv.LookPath(t, "fio")
	volume := t.TempDir()
	dir := filepath.Join(volume, runDirPrefix+"test")
	// An engine fio does not have: fio fails with its own message.
	spec := testSpec(t, time.Second)
	args, err := fio.Args(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--ioengine=nosuchengine")
	out, err := runScript(t, dir, args)
	if err == nil {
		t.Fatalf("script succeeded:\n%s", out)
	}
	_, perr := fio.Parse(out)
	var fe *fio.Error
	if !errors.As(perr, &fe) || !strings.Contains(fe.Error(), "nosuchengine") {
		t.Errorf("parse error = %v, want fio's message about the engine\n%s", perr, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory still there: %v", err)
	}
}

func TestPodScriptWithoutFio(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"mkdir", "rm"} {
		if err := os.Symlink(mustLookPath(t, tool), filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), mustLookPath(t, "sh"), "-c", podScript, "sh", filepath.Join(t.TempDir(), "run"), testMarker, "--name=x")
	cmd.Env = []string{"PATH=" + bin}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 127 || !strings.Contains(string(out), "fio: not found") {
		t.Errorf("err = %v, output %q", err, out)
	}
	_, perr := fio.Parse(out)
	if perr == nil || !strings.Contains(perr.Error(), "use an image with fio") {
		t.Errorf("parse error = %v", perr)
	}
}

func TestPodScriptStopsFioOnSIGTERM(t *testing.T) {
	testenv.LookPath(t, "fio")
	dir := filepath.Join(t.TempDir(), runDirPrefix+"term")
	args, err := fio.Args(testSpec(t, time.Minute), dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "sh", append([]string{"-c", podScript, "sh", dir, testMarker}, args...)...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until fio has laid out its file, then stop the script as kubelet stops a container.
	files := fio.Files(testSpec(t, time.Minute), dir)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(files[0]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fio never created its file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 143 {
		t.Errorf("exit = %v, want status 143", err)
	}
	if strings.Contains(output.String(), testMarker) {
		t.Errorf("a stopped run printed the end line:\n%s", output.String())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("stopping took %s, longer than the pod's grace period", took)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory still there after SIGTERM: %v", err)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	return testenv.LookPath(t, name)
}
