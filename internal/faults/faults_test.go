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
	// repo serves the chart fixtures (the backend rows); releases reads their Helm releases.
	repo     string
	releases releases
}

// workload is what the faulted command makes, changes or removes: n local volumes on node 1
// (their directories made over SSH; the first five hold a user's data from before the apply), n
// StorageClasses, or one storage backend (backend_test.go); or the data source it reads: a
// benchmark in a pod or of a node path (benchmark_test.go), the capacity of every node.
type workload struct {
	kind string // "pv", "class", "backend", "bench", "benchpath", "capacity" or "migration"
	n    int
	// second puts the volumes on node 2, on its data disk.
	second bool
	// transfer is a migration's cross_node_transfer (migration_test.go).
	transfer string
}

// volumesNode is the node a pv workload's volumes are on.
func (wl workload) volumesNode(e env) acctest.ClusterNode {
	if wl.second {
		return e.second
	}
	return e.node
}

// own is what of found the workload's resources make themselves (and their state records):
// a backend's release makes classes and Deployments of its own.
func (wl workload) own(found objects) objects {
	mine := objects{}
	for k, v := range found {
		if strings.HasPrefix(k, wl.kind+"/") {
			mine[k] = v
		}
	}
	return mine
}

// keptDirs is how many of a pv workload's directories exist before the apply and hold data: the
// provider adopts them and must never remove them.
const keptDirs = 5

// reads is whether the workload is a data source read by an apply, which leaves nothing in the
// state.
func (wl workload) reads() bool {
	return wl.kind == "bench" || wl.kind == "benchpath" || wl.kind == "capacity"
}

func (wl workload) String() string {
	switch wl.kind {
	case "backend":
		return "storage_backend (OpenEBS fixture)"
	case "bench":
		return "storage_benchmark in a pod (" + benchRuntime + " of fio)"
	case "benchpath":
		return "storage_benchmark of a node path (" + benchRuntime + " of fio)"
	case "capacity":
		return "storage_capacity of / on every node"
	case "migration":
		return migrationString(wl.transfer)
	}
	if wl.kind == "pv" && wl.second {
		return fmt.Sprintf("%d local_pv on node 2", wl.n)
	}
	if wl.kind == "pv" {
		return fmt.Sprintf("%d local_pv", wl.n)
	}
	return fmt.Sprintf("%d storage_class", wl.n)
}

// roundLabel marks each object with the round of the configuration that last wrote it: an update
// row changes it on every object.
const roundLabel = "faults.clusterstorage.io/round"

func (wl workload) config(e env, prefix, base string, round int) string {
	if wl.kind == "backend" {
		return backendConfig(e.repo, prefix, round)
	}
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
  labels                      = { %q = "%d" }
}
`, wl.n, prefix, wl.volumesNode(e).Name, base, prefix, keptDirs, roundLabel, round)
	}
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_class" "c" {
  count               = %d
  name                = "%s-${count.index}"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
  labels              = { %q = "%d" }
}
`, wl.n, prefix, roundLabel, round)
}

// phase is what the faulted command does to the workload.
type phase int

const (
	create  phase = iota // an apply that makes every object
	update               // an apply that changes a label on every object an apply made
	destroy              // a destroy of what an apply made
)

// command is the CLI command of the phase.
func (p phase) command() string {
	if p == destroy {
		return "destroy"
	}
	return "apply"
}

func (p phase) String() string { return [...]string{"apply", "update", "destroy"}[p] }

// faultCase is one row: fault hits a command (apply, update or destroy) on the workload once a
// quarter of it is done.
type faultCase struct {
	fault, during string
	workload      workload
	phase         phase
	inject        func(t *testing.T, e env, r *acctest.CLIRun)
	// recover undoes the fault once the faulted command ended (before the next run).
	recover func(t *testing.T, e env)
	// ci: the row is in the subset `make test` runs; `make faults` runs every row.
	ci bool
}

var (
	restartAPIServer = func(t *testing.T, e env, _ *acctest.CLIRun) { e.cp.Restart(t, "kube-apiserver") }
	stallEtcd        = func(t *testing.T, e env, _ *acctest.CLIRun) { e.cp.Stall(t, "etcd", 10*time.Second) }
	cutSSH           = func(t *testing.T, e env, _ *acctest.CLIRun) {
		if e.cp.DropSSH(t) == 0 {
			t.Fatal("the provider held no SSH connection to cut")
		}
	}
	killProvider = func(t *testing.T, _ env, r *acctest.CLIRun) { r.KillProvider(t) }
	powerOff     = func(t *testing.T, e env, _ *acctest.CLIRun) {
		secondOff.Store(true)
		t.Cleanup(func() { powerOn(t, e) }) // also when the test fails first
		e.second.PowerOff(t)
	}
	// waitOutKilled waits, after a killed install or upgrade, until the next apply may repair the
	// release the provider left pending (the user is told when: "apply again after").
	waitOutKilled = func(t *testing.T, _ env) { time.Sleep(backendTimeout + recoverMargin) }
	powerOn       = func(t *testing.T, e env) {
		if secondOff.Swap(false) {
			e.second.PowerOn(t)
		}
	}
)

// secondOff is whether a row powered node 2 off and has not powered it on again.
var secondOff atomic.Bool

var matrix = []faultCase{
	{fault: "kube-apiserver restarted", workload: workload{kind: "pv", n: 100}, inject: restartAPIServer, ci: true},
	{fault: "kube-apiserver restarted", workload: workload{kind: "pv", n: 100}, phase: destroy, inject: restartAPIServer},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: workload{kind: "pv", n: 100}, inject: stallEtcd},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: workload{kind: "class", n: 100}, inject: stallEtcd},
	{fault: "SSH connections cut (sshd's sessions killed)", workload: workload{kind: "pv", n: 100}, inject: cutSSH, ci: true},
	{fault: "node 2 powered off (its machine)", workload: workload{kind: "pv", n: 100, second: true}, inject: powerOff, recover: powerOn},
	{fault: "provider SIGKILLed", workload: workload{kind: "pv", n: 100}, inject: killProvider, ci: true},
	{fault: "provider SIGKILLed", workload: workload{kind: "pv", n: 100}, phase: update, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "pv", n: 100}, phase: destroy, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "class", n: 100}, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "class", n: 100}, phase: update, inject: killProvider},
	{fault: "provider SIGKILLed", workload: workload{kind: "class", n: 100}, phase: destroy, inject: killProvider},
	{fault: "kube-apiserver restarted", workload: backendWorkload, inject: restartAPIServer},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: backendWorkload, inject: stallEtcd},
	{fault: "provider SIGKILLed", workload: backendWorkload, inject: killProvider, recover: waitOutKilled},
	{fault: "provider SIGKILLed", workload: backendWorkload, phase: update, inject: killProvider, recover: waitOutKilled},
	{fault: "provider SIGKILLed", workload: backendWorkload, phase: destroy, inject: killProvider},
	{fault: "kube-apiserver restarted", workload: benchWorkload, inject: restartAPIServer},
	{fault: "etcd stopped (SIGSTOP) for 10 s", workload: benchWorkload, inject: stallEtcd},
	{fault: "provider SIGKILLed", workload: benchWorkload, inject: killProvider},
	{fault: "SSH connections cut (sshd's sessions killed)", workload: nodePathWorkload, inject: cutSSH},
	{fault: "provider SIGKILLed", workload: nodePathWorkload, inject: killProvider},
	{fault: "node 2 powered off (its machine)", workload: capacityWorkload, inject: powerOff, recover: powerOn},
	{fault: "SSH connections cut (sshd's sessions killed)", workload: workload{kind: "migration", n: 1, transfer: "ssh"}, inject: cutSSH},
	{fault: "node 2 powered off (its machine)", workload: workload{kind: "migration", n: 1, transfer: "pod_network"}, inject: powerOff, recover: powerOn},
	{fault: "node 2 powered off (its machine)", workload: workload{kind: "migration", n: 1, transfer: "ssh"}, inject: powerOff, recover: powerOn},
}

var (
	backendWorkload  = workload{kind: "backend", n: 1}
	benchWorkload    = workload{kind: "bench", n: 1}
	nodePathWorkload = workload{kind: "benchpath", n: 1}
	capacityWorkload = workload{kind: "capacity", n: 1}
)

// The fault matrix: each row's fault hits a running apply (a create, an update or a data source's
// read) or destroy on the local cluster's real processes. For a resource, the state must then
// record nothing the cluster lacks, the next run must converge (a plan after it shows no changes),
// the user's data must be intact, and destroy must leave nothing behind; for a data source, the
// next read must succeed and leave nothing of either run. FAULTS_ALL=1 (make faults) runs every
// row, else only the rows marked ci.
func TestAccFaults_matrix(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
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
		if c.workload.kind == "backend" && e.repo == "" {
			e.repo, e.releases = acctest.StartChartRepo(t, acctest.ChartsDir()), newReleases(t)
		}
		c.during = c.phase.String() + " of " + c.workload.String()
		switch {
		case c.workload.reads():
			c.during = "read of " + c.workload.String()
		case c.workload.kind == "migration":
			c.during = "first copy of " + c.workload.String()
		case c.workload.kind == "backend" && c.phase != destroy:
			c.during = map[phase]string{create: "install", update: "upgrade"}[c.phase] + " of " + c.workload.String()
		}
		t.Run(c.fault+" during "+c.during, func(t *testing.T) { c.run(t, e) })
	}
}

func (c faultCase) run(t *testing.T, e env) {
	if c.workload.kind == "migration" {
		c.runMigration(t, e)
		return
	}
	client := acctest.Kube(t)
	prefix := acctest.RandomName("fault")
	vols := disk{c.workload.volumesNode(e)}
	base := t.TempDir()
	if !vols.local() {
		base = filepath.Join(vols.node.DataDisks[0], prefix)
		t.Cleanup(func() { vols.node.MustRun(t, `rm -rf -- "$1"`, base) })
	}
	t.Cleanup(func() { removeLeftovers(t, client, prefix) })
	if c.workload.kind == "backend" {
		t.Cleanup(func() { e.releases.remove(t, client, prefix) })
	}
	// observe lists what the row's objects are on the cluster; struck says when a quarter of the
	// faulted command's work is done.
	observe := func() objects {
		found := clusterObjects(t, client, prefix)
		if c.workload.kind == "backend" {
			e.releases.objects(t, client, prefix, found)
		}
		return found
	}
	struck := func() bool { return c.quarterDone(observe()) }
	config := func(round int) string { return c.workload.config(e, prefix, base, round) }
	switch c.workload.kind {
	case "backend":
		struck = func() bool {
			return e.releases.status(t, prefix) == map[phase]string{create: "pending-install", update: "pending-upgrade", destroy: "uninstalling"}[c.phase]
		}
	case "capacity":
		// The read takes about a second: the fault strikes as the apply starts.
		observe = func() objects { return objects{} }
		struck = func() bool { return true }
		config = func(int) string { return capacityConfig(t) }
	case "bench", "benchpath":
		f := newBenchFixture(t, e, c.workload)
		observe = func() objects {
			found := objects{}
			f.leftovers(t, found)
			return found
		}
		struck = f.running
		config = func(int) string { return f.configure }
	}
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
	w := acctest.NewWorkspace(t, e.cli, e.rc, config(1))
	if c.phase != create {
		if out, err := w.Exec(t, "apply", "-auto-approve"); err != nil {
			t.Fatalf("the apply before the %s: %v\n%s", c.phase, err, out)
		}
	}
	if c.phase == update {
		w.Write(t, config(2))
	}

	command := c.phase.command()
	r := w.Start(t, command, "-auto-approve")
	if !waitUntil(r, struck) {
		t.Fatalf("the %s ended before a quarter of it was done: the fault came too late (%v)\n%s", command, r.Wait(t, time.Minute), r.Output())
	}
	c.inject(t, e, r)
	err := r.Wait(t, 10*time.Minute)
	if c.recover != nil {
		c.recover(t, e)
	}
	res := row{Fault: c.fault, During: c.during, Apply: "succeeded"}
	var why []string
	if err != nil {
		res.Apply = "failed: " + firstError(r.Output())
		t.Logf("the faulted %s, as the user sees it:\n%s", command, errorsPart(r.Output()))
		// An error must say what happened, not blame the provider (Terraform's words for a
		// provider that contradicted its plan).
		if strings.Contains(r.Output(), "This is a bug in the provider") {
			why = append(why, "the faulted run reported a bug in the provider")
		}
	}

	if c.workload.reads() {
		why = append(why, c.readAgain(t, w, &res, observe)...)
	} else {
		why = append(why, c.convergeAgain(t, w, &res, observe)...)
	}
	left := observe()
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

// convergeAgain checks what a faulted command of a resource workload left: the state, refreshed
// as the next plan refreshes it, records nothing the cluster lacks; the next run of the same command
// converges (an apply leaves nothing to change); and a destroy then succeeds. It returns what
// failed.
func (c faultCase) convergeAgain(t *testing.T, w *acctest.Workspace, res *row, observe func() objects) []string {
	t.Helper()
	var why []string
	if out, err := w.Exec(t, "apply", "-refresh-only", "-auto-approve"); err != nil {
		why = append(why, "refreshing the state failed: "+firstError(out))
	}
	state, cluster := stateObjects(t, w), observe()
	if phantom := minus(state, cluster); len(phantom) > 0 {
		why = append(why, fmt.Sprintf("the state records %d objects the cluster does not have (%s)", len(phantom), strings.Join(phantom[:min(3, len(phantom))], ", ")))
	}
	// ... and no label value the object lacks (an update cut short: the refresh reads what is real).
	if wrong := differ(state, cluster); len(wrong) > 0 {
		why = append(why, fmt.Sprintf("the state records a round the cluster's object does not have for %d objects (%s)", len(wrong), strings.Join(wrong[:min(3, len(wrong))], ", ")))
	}
	if untracked := minus(c.workload.own(cluster), state); len(untracked) > 0 && c.phase != destroy {
		res.Untracked = len(untracked)
		t.Logf("the cluster has %d objects the state does not record: %s", len(untracked), strings.Join(untracked, ", "))
	}
	command := c.phase.command()
	if out, err := w.Exec(t, command, "-auto-approve"); err != nil {
		why = append(why, fmt.Sprintf("the next %s failed: %s", command, firstError(out)))
		t.Logf("the next %s:\n%s", command, errorsPart(out))
	} else if c.phase != destroy {
		out, err := w.Exec(t, "plan", "-detailed-exitcode")
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 2 {
			why = append(why, "a plan after the next apply still shows changes")
			t.Logf("the plan:\n%s", errorsPart(out))
		} else if err != nil {
			why = append(why, "a plan after the next apply failed: "+firstError(out))
		}
	}
	if c.phase != destroy {
		if out, err := w.Exec(t, "destroy", "-auto-approve"); err != nil {
			why = append(why, "the destroy afterwards failed: "+firstError(out))
		}
	}
	return why
}

// readAgain checks what a faulted read of a data source left: what the faulted run left on the
// cluster and the node is counted (untracked: the next run must remove it), and the next run must
// succeed. It returns what failed.
func (c faultCase) readAgain(t *testing.T, w *acctest.Workspace, res *row, observe func() objects) []string {
	t.Helper()
	if left := minus(observe(), nil); len(left) > 0 {
		res.Untracked = len(left)
		t.Logf("the faulted run left %d objects: %s", len(left), strings.Join(left, ", "))
	}
	if out, err := w.Exec(t, "apply", "-auto-approve"); err != nil {
		t.Logf("the next apply:\n%s", errorsPart(out))
		return []string{"the next apply failed: " + firstError(out)}
	}
	return nil
}

// quarterDone is whether a quarter of the command's work on a resource workload is done: a
// quarter of the objects made, changed (labelled with the new round) or removed.
func (c faultCase) quarterDone(found objects) bool {
	n := 0
	for _, round := range c.workload.own(found) {
		if c.phase != update || round == "2" {
			n++
		}
	}
	if c.phase == destroy {
		return n <= c.workload.n*3/4
	}
	return n >= c.workload.n/4
}

// waitUntil polls struck until it holds; false when the command ended first.
func waitUntil(r *acctest.CLIRun, struck func() bool) bool {
	for {
		if r.Ended() {
			return false
		}
		if struck() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}
