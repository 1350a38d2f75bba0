package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by Target.WithDefaults.
const (
	DefaultPort           = 22
	DefaultUser           = "root"
	DefaultConnectTimeout = 30 * time.Second
)

// DefaultKnownHostsFile is the known_hosts file used when a HostKeyPolicy names none.
const DefaultKnownHostsFile = "~/.ssh/known_hosts"

// Auth holds the ways to authenticate, tried in this order: private key, ssh-agent, password.
// At least one must be set.
type Auth struct {
	// PrivateKey is a private key in PEM (or OpenSSH) format.
	PrivateKey string
	// PrivateKeyFile is a path to a private key file; "~/" expands to the home directory.
	PrivateKeyFile string
	// Passphrase decrypts an encrypted PrivateKey or PrivateKeyFile.
	Passphrase string
	// Agent uses the ssh-agent listening on AgentSocket, or on $SSH_AUTH_SOCK when that is empty.
	Agent bool
	// AgentSocket overrides $SSH_AUTH_SOCK.
	AgentSocket string
	// Password is the login password.
	Password string
}

// IsZero reports whether no authentication method is set.
func (a Auth) IsZero() bool {
	return a.PrivateKey == "" && a.PrivateKeyFile == "" && !a.Agent && a.Password == ""
}

// describe lists the configured methods without secrets, for error messages.
func (a Auth) describe() string {
	var m []string
	if a.PrivateKey != "" {
		m = append(m, "inline private key")
	}
	if a.PrivateKeyFile != "" {
		m = append(m, "private key file "+a.PrivateKeyFile)
	}
	if a.Agent {
		m = append(m, "ssh-agent")
	}
	if a.Password != "" {
		m = append(m, "password")
	}
	return strings.Join(m, ", ")
}

// HostKeyPolicy says how the server's host key is verified. By default it is looked up in a
// known_hosts file.
type HostKeyPolicy struct {
	// KnownHostsFile is the known_hosts file to verify against (default: DefaultKnownHostsFile).
	KnownHostsFile string
	// PinnedKeys, when set, are the only accepted host keys, in authorized_keys format
	// ("ssh-ed25519 AAAA..."), one per line; KnownHostsFile is not read then.
	PinnedKeys string
	// InsecureIgnoreHostKey accepts any host key. Only for throw-away test machines.
	InsecureIgnoreHostKey bool
}

// Endpoint is one SSH server and how to log in to it.
type Endpoint struct {
	// Host is the DNS name or IP address.
	Host string
	// Port is the TCP port (default: 22).
	Port int
	// User is the login user (default: root).
	User string
	// Auth is how User authenticates.
	Auth Auth
	// HostKey is how the server's host key is verified.
	HostKey HostKeyPolicy
}

// Addr returns "host:port".
func (e Endpoint) Addr() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// String returns "user@host:port".
func (e Endpoint) String() string {
	return e.User + "@" + e.Addr()
}

// Target is a node to run commands on: its SSH endpoint, an optional bastion (jump host) to reach
// it through, whether to use sudo, and timeouts.
type Target struct {
	Endpoint
	// Node is the Kubernetes node name, when the target is one (Resolve sets it); errors name it.
	Node string
	// Bastion, when set, is the jump host the connection to Endpoint is tunnelled through.
	Bastion *Endpoint
	// Sudo runs every command through `sudo -n --` when User is not root.
	Sudo bool
	// ConnectTimeout bounds dialling and the SSH handshake (default: 30s).
	ConnectTimeout time.Duration
	// CommandTimeout bounds each command. 0 leaves it to the caller's context deadline, or, for a
	// context without one, to the pool's default (PoolOptions.DefaultCommandTimeout).
	CommandTimeout time.Duration
}

// WithDefaults returns t with unset fields given their defaults (the bastion's port and user too).
func (t Target) WithDefaults() Target {
	t.Endpoint = t.withDefaults()
	if t.Bastion != nil {
		b := t.Bastion.withDefaults()
		t.Bastion = &b
	}
	if t.ConnectTimeout == 0 {
		t.ConnectTimeout = DefaultConnectTimeout
	}
	return t
}

func (e Endpoint) withDefaults() Endpoint {
	if e.Port == 0 {
		e.Port = DefaultPort
	}
	if e.User == "" {
		e.User = DefaultUser
	}
	if !e.HostKey.InsecureIgnoreHostKey && e.HostKey.PinnedKeys == "" && e.HostKey.KnownHostsFile == "" {
		e.HostKey.KnownHostsFile = DefaultKnownHostsFile
	}
	return e
}

// Validate reports every problem with t (after WithDefaults) in one error.
func (t Target) Validate() error {
	errs := t.validate("")
	if t.Bastion != nil {
		errs = append(errs, t.Bastion.validate("bastion ")...)
	}
	if t.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("connect timeout must not be negative, got %s", t.ConnectTimeout))
	}
	if t.CommandTimeout < 0 {
		errs = append(errs, fmt.Errorf("command timeout must not be negative, got %s", t.CommandTimeout))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid SSH target %s: %w", t.String(), errors.Join(errs...))
	}
	return nil
}

func (e Endpoint) validate(what string) []error {
	var errs []error
	if e.Host == "" {
		errs = append(errs, fmt.Errorf("%shost is empty", what))
	}
	if e.Port < 1 || e.Port > 65535 {
		errs = append(errs, fmt.Errorf("%sport %d is not between 1 and 65535", what, e.Port))
	}
	if e.User == "" {
		errs = append(errs, fmt.Errorf("%suser is empty", what))
	}
	if e.Auth.IsZero() {
		errs = append(errs, fmt.Errorf("%sauthentication is not configured: set a private key, a private key file, agent or a password", what))
	}
	if e.Auth.PrivateKey != "" && e.Auth.PrivateKeyFile != "" {
		errs = append(errs, fmt.Errorf("%sprivate key and private key file are both set: set only one", what))
	}
	if e.HostKey.InsecureIgnoreHostKey && e.HostKey.PinnedKeys != "" {
		errs = append(errs, fmt.Errorf("%shost key is both pinned and ignored: set only one", what))
	}
	if e.HostKey.PinnedKeys != "" {
		if _, err := parsePinnedKeys(e.HostKey.PinnedKeys); err != nil {
			errs = append(errs, fmt.Errorf("%spinned host key: %w", what, err))
		}
	}
	return errs
}

// poolKey identifies the connection t needs: user@host:port, followed by a hash of everything else
// that changes what the connection is or who it logs in as (auth, host key policy, bastion). The
// hash keeps secrets out of the key.
func (e Endpoint) poolKey(via *Endpoint) string {
	h := sha256.New()
	for _, s := range []string{
		e.Auth.PrivateKey, e.Auth.PrivateKeyFile, e.Auth.Passphrase,
		strconv.FormatBool(e.Auth.Agent), e.Auth.AgentSocket, e.Auth.Password,
		e.HostKey.KnownHostsFile, e.HostKey.PinnedKeys, strconv.FormatBool(e.HostKey.InsecureIgnoreHostKey),
	} {
		// Length-prefixed, so that moving bytes between fields changes the hash.
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s + ";"))
	}
	if via != nil {
		h.Write([]byte("via:" + via.poolKey(nil)))
	}
	return e.String() + "#" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Override changes the provider-level defaults for one node. Zero fields keep the default.
type Override struct {
	// Host replaces the address found on the Node object.
	Host string
	// Port replaces the default port.
	Port int
	// User replaces the default user.
	User string
	// Auth, when set, replaces the default authentication as a whole.
	Auth *Auth
	// HostKey, when set, replaces the default host key policy as a whole.
	HostKey *HostKeyPolicy
	// Bastion, when set, replaces the default bastion.
	Bastion *Endpoint
	// Sudo, when set, replaces the default.
	Sudo *bool
}

// expandHome replaces a leading "~/" (or a lone "~") with the current user's home directory.
func expandHome(path string) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding %q: %w", path, err)
	}
	return filepath.Join(home, strings.TrimPrefix(path, "~")), nil
}
