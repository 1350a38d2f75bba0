package faults_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// env is what every row of the matrix shares: node 1 (this machine), node 2 (a machine of its
// own), the local control plane and the CLI under test with this tree's provider.
type env struct {
	node, second acctest.ClusterNode
	cp           acctest.ControlPlane
	cli, rc      string
}

// workload is what the faulted command makes or removes: n local volumes on node 1 (their
// directories made over SSH; the first five hold a user's data from before the apply) or n
// StorageClasses.
type workload struct {
	kind string // "pv" or "class"
	n    int
	// second puts the volumes on node 2, on its data disk.
	second bool
}

// volumesNode is the node a pv workload's volumes are on.
func (wl workload) volumesNode(e env) acctest.ClusterNode {
	if wl.second {
		return e.second
	}
	return e.node
}

// keptDirs is how many of a pv workload's directories exist before the apply and hold data: the
// provider adopts them and must never remove them.
const keptDirs = 5

func (wl workload) String() string {
	if wl.kind == "pv" && wl.second {
		return fmt.Sprintf("%d local_pv on node 2", wl.n)
	}
	if wl.kind == "pv" {
		return fmt.Sprintf("%d local_pv", wl.n)
	}
	return fmt.Sprintf("%d storage_class", wl.n)
}

func (wl workload) config(e env, prefix, base string) string {
	if wl.kind == "pv" {
		return acctest.ProviderConfigNodes(e.node, e.second) + fmt.Sprintf(`
resource "clusterstorage_local_pv" "v" {
  count                       = %d
  name                        = "%s-${count.index}"
  node                        = %q
  path                        = "%s/v${count.index}"
  capacity                    = "1Gi"
  storage_class_name          = %q
  delete_directory_on_destroy = count.index >= %d
}
`, wl.n, prefix, wl.volumesNode(e).Name, base, prefix, keptDirs)
	}
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_class" "c" {
  count               = %d
  name                = "%s-${count.index}"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
}
`, wl.n, prefix)
}

// faultCase is one row: fault hits a command (apply, or destroy of what an apply made) on the
// workload once a quarter of it is done.
type faultCase struct {
	fault, during string
	workload      workload
	destroy       bool
	inject        func(t *testing.T, e env, r *run)
	// recover undoes the fault once the faulted command ended (before the next run).
	recover func(t *testing.T, e env)
	// ci: the row is in the subset `make test` runs; `make faults` runs every row.
	ci bool
}

var (
	restartAPIServer = func(t *testing.T, e env, _ *run) { e.cp.Restart(t, "kube-apiserver") }
	stallEtcd        = func(t *testing.T, e env, _ *run) { e.cp.Stall(t, "etcd", 10*time.Second) }
	cutSSH           = func(t *testing.T, e env, _ *run) {
		if e.cp.DropSSH(t) == 0 {
			t.Fatal("the provider held no SSH connection to cut")
		}
	}
	killProvider = func(t *testing.T, _ env, r *run) { r.killProvider(t) }
	powerOff     = func(t *testing.T, e env, _ *run) {
		secondOff.Store(true)
		t.Cleanup(func() { powerOn(t, e) }) // also when the test fails first
		e.second.PowerOff(t)
	}
	powerOn = func(t *testing.T, e env) {
		if secondOff.Swap(false) {
			e.second.PowerOn(t)
		}
	}
)

// secondOff is whether a row powered node 2 off and has not powered it on again.
var secondOff atomic.Bool

var matrix = []faultCase{
	{fault: "kube-apiserver restarted", workload: workload{kind: "pv", n: 100}, inject: restartAPIServer, ci: true},
	{fault: "kube-apiserver restarted", workload: workload{kind: "pv", n: 100}, destroy: true, inject: restartAPIServer},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: workload{kind: "pv", n: 100}, inject: stallEtcd},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: workload{kind: "class", n: 100}, inject: stallEtcd},
	{fault: "SSH connections cut (sshd's sessions killed)", workload: workload{kind: "pv", n: 100}, inject: cutSSH, ci: true},
	{fault: "node 2 powered off (its machine)", workload: workload{kind: "pv", n: 100, second: true}, inject: powerOff, recover: powerOn},
	{fault: "provider SIGKILLed", workload: workload{kind: "pv", n: 100}, inject: killProvider, ci: true},
	{fault: "provider SIGKILLed", workload: workload{kind: "pv", n: 100}, destroy: true, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "class", n: 100}, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "class", n: 100}, destroy: true, inject: killProvider},
}

// The fault matrix: each row's fault hits a running apply or destroy on the local cluster's real
// processes; then the state must record nothing the cluster lacks, the next run must converge (a
// plan after it shows no changes), the user's data must be intact, and destroy must leave nothing
// behind. FAULTS_ALL=1 (make faults) runs every row, else only the rows marked ci.
func TestAccFaults_matrix(t *testing.T) {
	nodes := acctest.RequireNodesAlone(t, 2)
	if nodes[0].MachineDir != "" || nodes[1].MachineDir == "" {
		t.Fatalf("the matrix cuts the SSH connections of node 1, which must run on this machine (%s: %q), and powers off node 2, which must be a machine (%s: %q)",
			nodes[0].Name, nodes[0].MachineDir, nodes[1].Name, nodes[1].MachineDir)
	}
	cli, rc := acctest.DevCLI(t)
	e := env{node: nodes[0], second: nodes[1], cp: acctest.LocalControlPlane(t), cli: cli, rc: rc}
	all := os.Getenv("FAULTS_ALL") != ""
	for _, c := range matrix {
		if !c.ci && !all {
			continue
		}
		command := "apply"
		if c.destroy {
			command = "destroy"
		}
		c.during = command + " of " + c.workload.String()
		t.Run(c.fault+" during "+c.during, func(t *testing.T) { c.run(t, e) })
	}
}

func (c faultCase) run(t *testing.T, e env) {
	client := acctest.Kube(t)
	prefix := acctest.RandomName("fault")
	vols := disk{c.workload.volumesNode(e)}
	base := t.TempDir()
	if !vols.local() {
		base = filepath.Join(vols.node.DataDisks[0], prefix)
		t.Cleanup(func() { vols.node.MustRun(t, `rm -rf -- "$1"`, base) })
	}
	t.Cleanup(func() { removeLeftovers(t, client, prefix) })
	var data dataFiles
	var made []string // the directories the provider makes and must remove on destroy
	if c.workload.kind == "pv" {
		var kept []string
		for i := range c.workload.n {
			dir := filepath.Join(base, fmt.Sprintf("v%d", i))
			if i < keptDirs {
				kept = append(kept, dir)
			} else {
				made = append(made, dir)
			}
		}
		data = vols.writeData(t, kept)
	}
	w := newWorkspace(t, e.cli, e.rc, c.workload.config(e, prefix, base))
	if c.destroy {
		if out, err := w.exec(t, "apply", "-auto-approve"); err != nil {
			t.Fatalf("the apply before the destroy: %v\n%s", err, out)
		}
	}

	command := "apply"
	if c.destroy {
		command = "destroy"
	}
	r := w.start(t, command, "-auto-approve")
	if !c.waitQuarter(t, r, client, prefix) {
		t.Fatalf("the %s ended before a quarter of it was done: the fault came too late (%v)\n%s", command, r.wait(t, 0), r.output())
	}
	c.inject(t, e, r)
	err := r.wait(t, 10*time.Minute)
	if c.recover != nil {
		c.recover(t, e)
	}
	res := row{Fault: c.fault, During: c.during, Apply: "succeeded"}
	var why []string
	if err != nil {
		res.Apply = "failed: " + firstError(r.output())
		t.Logf("the faulted %s, as the user sees it:\n%s", command, errorsPart(r.output()))
		// An error must say what happened, not blame the provider (Terraform's words for a
		// provider that contradicted its plan).
		if strings.Contains(r.output(), "This is a bug in the provider") {
			why = append(why, "the faulted run reported a bug in the provider")
		}
	}

	// The state, refreshed as the next plan refreshes it, records nothing the cluster lacks.
	if out, err := w.exec(t, "apply", "-refresh-only", "-auto-approve"); err != nil {
		why = append(why, "refreshing the state failed: "+firstError(out))
	}
	state, cluster := w.stateNames(t), clusterNames(t, client, prefix)
	if phantom := minus(state, cluster); len(phantom) > 0 {
		why = append(why, fmt.Sprintf("the state records %d objects the cluster does not have (%s)", len(phantom), strings.Join(phantom[:min(3, len(phantom))], ", ")))
	}
	if untracked := minus(cluster, state); len(untracked) > 0 && !c.destroy {
		res.Untracked = len(untracked)
		t.Logf("the cluster has %d objects the state does not record: %s", len(untracked), strings.Join(untracked, ", "))
	}
	// The next run of the same command converges: an apply leaves nothing to change.
	if out, err := w.exec(t, command, "-auto-approve"); err != nil {
		why = append(why, fmt.Sprintf("the next %s failed: %s", command, firstError(out)))
		t.Logf("the next %s:\n%s", command, errorsPart(out))
	} else if !c.destroy {
		out, err := w.exec(t, "plan", "-detailed-exitcode")
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 2 {
			why = append(why, "a plan after the next apply still shows changes")
			t.Logf("the plan:\n%s", errorsPart(out))
		} else if err != nil {
			why = append(why, "a plan after the next apply failed: "+firstError(out))
		}
	}
	if !c.destroy {
		if out, err := w.exec(t, "destroy", "-auto-approve"); err != nil {
			why = append(why, "the destroy afterwards failed: "+firstError(out))
		}
	}
	left := clusterNames(t, client, prefix)
	res.Leaked = len(left)
	for _, dir := range made {
		if vols.exists(t, dir) {
			res.Leaked++
		}
	}
	res.Lost = vols.lost(t, data)
	res.Survived = len(why) == 0
	res.Why = strings.Join(why, "; ")
	report(t, res)
	if !res.Survived || res.Leaked != 0 || res.Lost != 0 {
		t.Errorf("%s during %s: survived=%t leaked=%d lost=%d: %s (left: %v)", c.fault, c.during, res.Survived, res.Leaked, res.Lost, res.Why, minus(left, nil))
	}
}

// waitQuarter waits until a quarter of the command's work is done on the cluster (a quarter of
// the objects made, or removed); false when the command ended first.
func (c faultCase) waitQuarter(t *testing.T, r *run, client kubeClient, prefix string) bool {
	t.Helper()
	for {
		select {
		case err := <-r.done:
			r.done <- err
			return false
		default:
		}
		n := len(clusterNames(t, client, prefix))
		if (!c.destroy && n >= c.workload.n/4) || (c.destroy && n <= c.workload.n*3/4) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}
