// Package node runs commands on cluster nodes over SSH. It holds no Terraform types.
//
// A Pool keeps one connection per endpoint and shares it among concurrent callers; Pool.Host gives
// a Host for a Target (resolved per node with Resolve from provider defaults, per-node overrides
// and the Node's address). Commands are built with NewCommand or Script from fixed text and
// arguments that are each quoted with Quote, so no value is ever interpreted by a shell:
//
//	pool := node.NewPool(node.PoolOptions{Logger: logf})
//	defer pool.Close()
//	host, err := pool.Host(target)
//	...
//	res, err := host.Run(ctx, node.NewCommand("mkdir", "-p", "--", path))
//	fi, err := host.Stat(ctx, path)
//
// Host keys are verified against known_hosts or pinned keys unless explicitly ignored. A failed
// command returns an *ExitError with its exit code and stderr; a refused host key a
// *HostKeyError; a refused login an *AuthError. Cancelling the context stops the remote command.
//
// Each Run or Exec is an SSH session of its own. The small file operations that many resources do
// at once (Stat, RealPath, MkdirAll, RemoveDir) share commands between concurrent callers
// (batch.go), and those commands run one after another in a long-lived shell per connection
// (shell.go), so they cost neither a session nor a start of the login shell each.
package node
