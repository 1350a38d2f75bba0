package volumemigration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
)

// cleanDaemon makes the test remove, at its end, the daemon of a copy over SSH (with dir) and
// its directory on node 2, should a failure have left them: the daemon's script and rsync, found
// by the paths in their command lines, then the directory.
func (c *crossNode) cleanDaemon(t *testing.T, dir func() string) {
	t.Cleanup(func() {
		d := dir()
		if d == "" {
			return
		}
		if _, err := c.second.Run(t, `pkill -f -- "$1/secrets"; pkill -f -- "$1/rsyncd.conf"; rm -rf -- "$1"`, d); err != nil {
			t.Errorf("removing the daemon of %s on node %s: %v", d, c.second.Name, err)
		}
	})
}

// sshConfig is the migration of crossNode with the provider's ssh block reaching every node
// (withSSH) or not, and cross_node_transfer.
func (c *crossNode) sshConfig(t *testing.T, withSSH bool, transfer string) string {
	provider := acctest.ProviderConfig()
	if withSSH {
		provider = acctest.ProviderConfigNodes(acctest.RequireNodes(t, 2)...)
	}
	return provider + acctest.LoadConfig(t, "cross_node_ssh.tf", c.ns, c.class, c.second.Name, transfer, acctest.RsyncImage)
}

// objectsSeen records the names of the migration's pods and Secrets made in a namespace while
// it runs, from a watch: what a list at the end cannot show (they are removed).
type objectsSeen struct {
	mu    sync.Mutex
	names []string
}

func watchMigrationObjects(t *testing.T, c *crossNode) *objectsSeen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"}
	pods, err := c.client.CoreV1().Pods(c.ns).Watch(ctx, selector)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	secrets, err := c.client.CoreV1().Secrets(c.ns).Watch(ctx, selector)
	if err != nil {
		cancel()
		pods.Stop()
		t.Fatal(err)
	}
	seen := &objectsSeen{}
	var wg sync.WaitGroup
	for kind, w := range map[string]watch.Interface{"pod": pods, "secret": secrets} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added {
					continue
				}
				if o, ok := ev.Object.(metav1.Object); ok {
					seen.mu.Lock()
					seen.names = append(seen.names, kind+" "+o.GetName())
					seen.mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(func() {
		pods.Stop()
		secrets.Stop()
		cancel()
		wg.Wait()
	})
	return seen
}

// onlyBinders fails unless every object seen is a pod that binds the new claim: no rsync daemon
// or client pod and no Secret went with the copy over SSH.
func (s *objectsSeen) onlyBinders() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.names {
		if !strings.HasPrefix(n, "pod ") || !strings.HasSuffix(n, "-bind") {
			return fmt.Errorf("the copy over SSH made %s (all made: %v)", n, s.names)
		}
	}
	return nil
}

// TestAccVolumeMigration_crossNodeSSH moves a claim from a local volume on node 1 to one on node
// 2 while a writer writes records to it, the copy between nodes going over the provider's SSH
// connections (cross_node_transfer = "ssh"): no rsync pod or Secret is ever made (a watch sees
// every pod and Secret of the migration), and the bytes go through the provider's forwarder.
// First a run stops as a killed provider would in the first copy, once rsync's connection
// through the forwarder is open; its daemon is left on node 2 and the apply that follows stops
// it and finishes: every record on node 2, the daemon's directory gone. "ssh" without the
// provider's ssh block is refused at plan.
func TestAccVolumeMigration_crossNodeSSH(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	c := newCrossNode(t, false)
	seen := watchMigrationObjects(t, c)
	hosts := map[string]*node.Host{}
	for _, n := range acctest.RequireNodes(t, 2) {
		hosts[n.Name] = n.Host(t)
	}
	m := &volumemigration.Migrator{Client: c.client, Spec: volumemigration.Spec{
		Namespace: c.ns, Claim: "data", StorageClass: c.class, TargetNode: c.second.Name, Image: acctest.RsyncImage, PullPolicy: "Never", Transfer: "ssh",
	}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) },
		Hosts: func(_ context.Context, name string) (*node.Host, error) {
			if h := hosts[name]; h != nil {
				return h, nil
			}
			return nil, fmt.Errorf("no node %s", name)
		}}
	var dir, daemonPID string
	c.cleanDaemon(t, func() string { return dir })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      c.sshConfig(t, false, "ssh"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`cross_node_transfer = "ssh" needs the provider's ssh\s+block`),
			},
			{
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					claim, err := c.client.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "data", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					dir = volumemigration.SSHDir(m, claim)
					if err := volumemigration.RunKilledInSSHCopy(ctx, m); err != volumemigration.ErrKilled {
						t.Fatalf("the killed run returned %v", err)
					}
					if n := volumemigration.ForwardedBytes(m); n != 0 {
						t.Logf("the killed run's forwarder carried %d bytes", n)
					}
					pid, err := c.second.Run(t, `cat "$1/rsyncd.pid"`, dir)
					if daemonPID = strings.TrimSpace(pid); err != nil || daemonPID == "" {
						t.Fatalf("after the killed run: no daemon's pid in %s on node %s: %v", dir, c.second.Name, err)
					}
					if _, err := c.second.Run(t, `kill -0 "$1"`, daemonPID); err != nil {
						t.Fatalf("after the killed run: its daemon (pid %s) does not run on node %s: %v", daemonPID, c.second.Name, err)
					}
				},
				Config: c.sshConfig(t, true, "ssh"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "volume", c.dstPV),
					resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "cross_node_transfer", "ssh"),
					func(*terraform.State) error { return c.check(t) },
					func(*terraform.State) error { return seen.onlyBinders() },
					func(*terraform.State) error {
						if c.second.Exists(t, dir) {
							return fmt.Errorf("the daemon's directory %s is left on node %s", dir, c.second.Name)
						}
						if out, err := c.second.Run(t, `if kill -0 "$1" 2>/dev/null; then cat "/proc/$1/cmdline"; fi`, daemonPID); err != nil || strings.Contains(out, "rsync") {
							return fmt.Errorf("the killed run's daemon (pid %s) still runs on node %s (%q, %v)", daemonPID, c.second.Name, out, err)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccVolumeMigration_crossNodeSSHCarries: a Migrator run over SSH (as the provider runs it)
// with cross_node_transfer left to "auto" and SSH to the nodes goes over SSH: its forwarder
// carries at least the bytes of a 4 MiB file of the source, which arrives on node 2 byte for
// byte, with every record, and no daemon pod exists.
func TestAccVolumeMigration_crossNodeSSHCarries(t *testing.T) {
	c := newCrossNode(t, false)
	hosts := map[string]*node.Host{}
	for _, n := range acctest.RequireNodes(t, 2) {
		hosts[n.Name] = n.Host(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A file of 4 MiB besides the writer's records: the copy must carry at least that.
	blob := make([]byte, 4<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.src, "blob"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &volumemigration.Migrator{Client: c.client, Spec: volumemigration.Spec{
		Namespace: c.ns, Claim: "data", StorageClass: c.class, TargetNode: c.second.Name, Image: acctest.RsyncImage, PullPolicy: "Never",
	}, Log: func(msg string, fields map[string]any) { t.Logf("%s %v", msg, fields) },
		Hosts: func(_ context.Context, name string) (*node.Host, error) { return hosts[name], nil }}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := volumemigration.ForwardedBytes(m); n < 4<<20 {
		t.Fatalf("the forwarder carried %d bytes, fewer than the 4 MiB file", n)
	}
	if err := c.check(t); err != nil {
		t.Fatal(err)
	}
	pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasSuffix(p.Name, "-rsyncd") {
			t.Fatalf("a daemon pod %s exists", p.Name)
		}
	}
	got, err := c.second.ReadFile(t, filepath.Join(c.dst, "blob"))
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("the 4 MiB file on node %s is not the source's (%d bytes, %v)", c.second.Name, len(got), err)
	}
}

// ownPool is a connection pool of the test's own to the cluster's nodes (as the provider's), so
// that closing it cuts this run's SSH connections only: its Hosts func.
func ownPool(t *testing.T) (*node.Pool, func(context.Context, string) (*node.Host, error)) {
	t.Helper()
	raw, err := os.ReadFile(acctest.NodesFile())
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		User       string                `json:"ssh_user"`
		Key        string                `json:"ssh_private_key"`
		KnownHosts string                `json:"ssh_known_hosts"`
		Nodes      []acctest.ClusterNode `json:"nodes"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	pool := node.NewPool(node.PoolOptions{})
	t.Cleanup(func() { _ = pool.Close() }) //nolint:errcheck // the test's end; a cut pool is closed already
	return pool, func(_ context.Context, name string) (*node.Host, error) {
		for _, n := range file.Nodes {
			if n.Name == name {
				return pool.Host(node.Target{Endpoint: node.Endpoint{
					Host: n.SSHHost, Port: n.SSHPort, User: file.User,
					Auth:    node.Auth{PrivateKeyFile: file.Key},
					HostKey: node.HostKeyPolicy{KnownHostsFile: file.KnownHosts},
				}, ConnectTimeout: 10 * time.Second})
			}
		}
		return nil, fmt.Errorf("no node %s in %s", name, acctest.NodesFile())
	}
}

// TestAccVolumeMigration_crossNodeSSHCut: the provider's SSH connections end (its pool closed)
// while the copy over SSH carries a 48 MiB file from node 1 to node 2, with the writer running.
// The run fails and leaves the claim on the source volume, and its daemon on node 2 ends with
// its session; the next run, on new connections,
// stops the daemon the cut run left on node 2 and moves the claim: every record on node 2, the
// file byte for byte, no daemon or its directory left there.
func TestAccVolumeMigration_crossNodeSSHCut(t *testing.T) {
	c := newCrossNode(t, false)
	blob := make([]byte, 48<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.src, "blob"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := volumemigration.Spec{Namespace: c.ns, Claim: "data", StorageClass: c.class, TargetNode: c.second.Name,
		Image: acctest.RsyncImage, PullPolicy: "Never", Transfer: "ssh"}
	pool, hosts := ownPool(t)
	cut := make(chan struct{})
	m := &volumemigration.Migrator{Client: c.client, Spec: spec, Hosts: hosts, Log: func(msg string, fields map[string]any) {
		t.Logf("cut run: %s %v", msg, fields)
		if strings.HasPrefix(msg, "forwarding the source node's port") {
			go func() {
				time.Sleep(300 * time.Millisecond) // rsync is under way
				_ = pool.Close()                   //nolint:errcheck // the cut
				close(cut)
			}()
		}
	}}
	if _, err := m.Run(ctx); err == nil {
		t.Fatal("the run whose SSH connections were cut succeeded")
	} else {
		t.Logf("the cut run: %v", err)
	}
	select {
	case <-cut:
	default:
		t.Fatal("the run failed before its copy over SSH began: nothing was cut")
	}
	claim, err := c.client.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil || claim.Spec.VolumeName != c.srcPV {
		t.Fatalf("after the cut run the claim is not on the source volume %s: %v (%v)", c.srcPV, claim.Spec.VolumeName, err)
	}
	dir := volumemigration.SSHDir(m, claim)
	c.cleanDaemon(t, func() string { return dir })
	// The cut ended the daemon's session: the daemon ends with it, before any other run.
	err = kube.Poll(ctx, 500*time.Millisecond, 30*time.Second, "the cut run's daemon on node "+c.second.Name+" to end", func(context.Context) (bool, string, error) {
		out, err := c.second.Run(t, `pgrep -f -- "$1/rsyncd.conf" || true`, dir)
		return err == nil && strings.TrimSpace(out) == "", out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The rollback deleted the new claim: node 2's static volume (Retain) is Released. Made
	// Available again, as its admin would, for the next run (its partial copy stays in it).
	if _, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, c.dstPV, types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/claimRef"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	_, hosts = ownPool(t)
	m = &volumemigration.Migrator{Client: c.client, Spec: spec, Hosts: hosts, Log: func(msg string, fields map[string]any) { t.Logf("next run: %s %v", msg, fields) }}
	if _, err := m.Run(ctx); err != nil {
		t.Fatalf("the run after the cut: %v", err)
	}
	if err := c.check(t); err != nil {
		t.Fatal(err)
	}
	// Compared by checksum: a command's output over SSH is capped at 32 MiB.
	sum, err := c.second.Run(t, `sha256sum < "$1"`, filepath.Join(c.dst, "blob"))
	if want := fmt.Sprintf("%x", sha256.Sum256(blob)); err != nil || strings.Fields(sum)[0] != want {
		t.Fatalf("the 48 MiB file on node %s is not the source's (sha256 %q, want %s; %v)", c.second.Name, sum, want, err)
	}
	if out, err := c.second.Run(t, `pgrep -f -- "$1/rsyncd.conf" || true; ls -d "$1" 2>/dev/null || true`, dir); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("left on node %s after the next run: %q (%v)", c.second.Name, out, err)
	}
}
