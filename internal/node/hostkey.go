package node

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError reports a server whose host key could not be verified: unknown, different from the
// one expected (a possible man-in-the-middle), or revoked.
type HostKeyError struct {
	// Addr is the "host:port" that was dialled.
	Addr string
	// Presented is the key the server offered, as "type SHA256:fingerprint".
	Presented string
	// Expected lists the keys that would have been accepted, each as "type SHA256:fingerprint"
	// with where it was found.
	Expected []string
	// Source says what the key was checked against ("known_hosts file X" or "the pinned host key").
	Source string
	// Unknown is true when Source has no key at all for Addr.
	Unknown bool
	// Revoked is true when the presented key is marked @revoked in known_hosts.
	Revoked bool
	// KnownHostsFile is the known_hosts file checked, when there was one.
	KnownHostsFile string
	// missingFile is true when KnownHostsFile does not exist.
	missingFile bool
}

// Error explains what was expected, what was seen and what to do.
func (e *HostKeyError) Error() string {
	switch {
	case e.Revoked:
		return fmt.Sprintf("host key verification failed for %s: the server presented %s, which %s marks as @revoked: do not connect until you know why the host uses a revoked key",
			e.Addr, e.Presented, e.Source)
	case e.Unknown:
		var b strings.Builder
		fmt.Fprintf(&b, "host key verification failed for %s: the server presented %s, but %s", e.Addr, e.Presented, e.Source)
		if e.missingFile {
			b.WriteString(" does not exist")
		} else {
			b.WriteString(" has no key for this host")
		}
		b.WriteString(". Check the fingerprint out of band (on the node: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then add the key to the known_hosts file")
		if host, port, err := net.SplitHostPort(e.Addr); err == nil && e.KnownHostsFile != "" {
			fmt.Fprintf(&b, " (ssh-keyscan -p %s %s >> %s)", port, Quote(host), Quote(e.KnownHostsFile))
		}
		b.WriteString(", pin it in the host key settings, or, on a throw-away test machine only, ignore host keys")
		return b.String()
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "host key MISMATCH for %s: the server presented %s, but %s expects %s. "+
			"Someone may be intercepting the connection, or the host was reinstalled and got new keys. "+
			"If the change is expected, check the new fingerprint out of band and replace the old key",
			e.Addr, e.Presented, e.Source, strings.Join(e.Expected, " or "))
		if e.KnownHostsFile != "" {
			fmt.Fprintf(&b, " (ssh-keygen -R %s -f %s, then add the new one)", Quote(knownhosts.Normalize(e.Addr)), Quote(e.KnownHostsFile))
		}
		return b.String()
	}
}

// describeKey returns "type SHA256:fingerprint".
func describeKey(k ssh.PublicKey) string {
	return k.Type() + " " + ssh.FingerprintSHA256(k)
}

// hostKeyVerifier is the host key callback for one endpoint, plus the host key algorithms to ask
// the server for so that it offers a key we can verify (a server with ed25519 and ecdsa keys
// otherwise offers whichever the client lists first, and a known_hosts file holding only the
// other one would report a mismatch). It remembers the last verification failure: the ssh package
// reports it wrapped in handshake errors, this keeps its type.
type hostKeyVerifier struct {
	callback   ssh.HostKeyCallback
	algorithms []string

	mu      sync.Mutex
	failure *HostKeyError
}

func (v *hostKeyVerifier) check(hostname string, remote net.Addr, key ssh.PublicKey) error {
	err := v.callback(hostname, remote, key)
	var hkErr *HostKeyError
	if errors.As(err, &hkErr) {
		v.mu.Lock()
		v.failure = hkErr
		v.mu.Unlock()
	}
	return err
}

func (v *hostKeyVerifier) lastFailure() *HostKeyError {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.failure
}

// newHostKeyVerifier builds the verifier for policy, reading known_hosts now.
func newHostKeyVerifier(addr string, policy HostKeyPolicy) (*hostKeyVerifier, error) {
	switch {
	case policy.InsecureIgnoreHostKey:
		return &hostKeyVerifier{callback: ssh.InsecureIgnoreHostKey()}, nil //nolint:gosec // explicitly asked for.
	case policy.PinnedKeys != "":
		keys, err := parsePinnedKeys(policy.PinnedKeys)
		if err != nil {
			return nil, fmt.Errorf("pinned host key: %w", err)
		}
		return pinnedVerifier(keys), nil
	default:
		return knownHostsVerifier(addr, policy.KnownHostsFile)
	}
}

// parsePinnedKeys parses one or more authorized_keys lines.
func parsePinnedKeys(text string) ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	rest := []byte(text)
	for len(bytes.TrimSpace(rest)) > 0 {
		key, _, _, next, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			return nil, fmt.Errorf("want authorized_keys format such as \"ssh-ed25519 AAAA...\" (the .pub file of the host key): %w", err)
		}
		keys = append(keys, key)
		rest = next
	}
	if len(keys) == 0 {
		return nil, errors.New("no key given")
	}
	return keys, nil
}

func pinnedVerifier(keys []ssh.PublicKey) *hostKeyVerifier {
	v := &hostKeyVerifier{}
	var expected []string
	for _, k := range keys {
		v.algorithms = appendAlgorithms(v.algorithms, k.Type())
		expected = append(expected, describeKey(k))
	}
	v.callback = func(hostname string, _ net.Addr, key ssh.PublicKey) error {
		for _, k := range keys {
			if bytes.Equal(k.Marshal(), key.Marshal()) {
				return nil
			}
		}
		return &HostKeyError{Addr: hostname, Presented: describeKey(key), Expected: expected, Source: "the pinned host key"}
	}
	return v
}

func knownHostsVerifier(addr, file string) (*hostKeyVerifier, error) {
	path, err := expandHome(file)
	if err != nil {
		return nil, fmt.Errorf("known_hosts file: %w", err)
	}
	source := "known_hosts file " + path
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		// Let the handshake run so that the error can show the key the server presents.
		return &hostKeyVerifier{callback: func(hostname string, _ net.Addr, key ssh.PublicKey) error {
			return &HostKeyError{Addr: hostname, Presented: describeKey(key), Source: source, Unknown: true, KnownHostsFile: path, missingFile: true}
		}}, nil
	}
	db, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts file %s: %w", path, err)
	}
	v := &hostKeyVerifier{algorithms: knownAlgorithms(db, addr)}
	v.callback = func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := db(hostname, remote, key)
		var keyErr *knownhosts.KeyError
		var revoked *knownhosts.RevokedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &revoked):
			return &HostKeyError{Addr: hostname, Presented: describeKey(key), Source: source, Revoked: true, KnownHostsFile: path}
		case errors.As(err, &keyErr):
			hkErr := &HostKeyError{Addr: hostname, Presented: describeKey(key), Source: source, Unknown: len(keyErr.Want) == 0, KnownHostsFile: path}
			for _, w := range keyErr.Want {
				hkErr.Expected = append(hkErr.Expected, fmt.Sprintf("%s (%s:%d)", describeKey(w.Key), w.Filename, w.Line))
			}
			return hkErr
		default:
			return fmt.Errorf("checking the host key of %s against %s: %w", hostname, source, err)
		}
	}
	return v, nil
}

// probeKey is a key no known_hosts file lists: checking it makes knownhosts report every key it
// has for a host, which tells which host key algorithms to ask the server for.
var probeKey = func() ssh.PublicKey {
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x5a}, ed25519.SeedSize)).Public()
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	return key
}()

// knownAlgorithms returns the host key algorithms matching the keys db holds for addr, or nil
// (no preference) when it holds none.
func knownAlgorithms(db ssh.HostKeyCallback, addr string) []string {
	if probeKey == nil {
		return nil
	}
	remote := &net.TCPAddr{}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		p, err := strconv.Atoi(port)
		if ip := net.ParseIP(host); ip != nil && err == nil {
			remote = &net.TCPAddr{IP: ip, Port: p}
		}
	}
	var keyErr *knownhosts.KeyError
	if !errors.As(db(addr, remote, probeKey), &keyErr) {
		return nil
	}
	var algos []string
	for _, w := range keyErr.Want {
		algos = appendAlgorithms(algos, w.Key.Type())
	}
	return algos
}

// appendAlgorithms appends the signature algorithms a host key of keyType can be verified with.
func appendAlgorithms(algos []string, keyType string) []string {
	var add []string
	switch keyType {
	case ssh.KeyAlgoRSA:
		add = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	case ssh.CertAlgoRSAv01:
		add = []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01}
	default:
		add = []string{keyType}
	}
	for _, a := range add {
		if !slices.Contains(algos, a) {
			algos = append(algos, a)
		}
	}
	return algos
}
