package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// AuthError reports that the server refused every authentication method offered.
type AuthError struct {
	// Endpoint is "user@host:port".
	Endpoint string
	// Methods describes the methods configured (without secrets).
	Methods string
	// Err is the ssh package's error, naming the methods the server took part in.
	Err error
}

// Error says who could not log in where, with what, and what to check.
func (e *AuthError) Error() string {
	return fmt.Sprintf("SSH authentication as %s failed (configured: %s): %v. "+
		"Check the user name, that the public key is in that user's ~/.ssh/authorized_keys on the node "+
		"(or that the password is right and the server allows password logins)", e.Endpoint, e.Methods, e.Err)
}

// Unwrap returns the ssh package's error.
func (e *AuthError) Unwrap() error { return e.Err }

// authMethods builds the ssh auth methods for a. Keys (configured and from the agent) go into one
// public key method: the ssh package tries each method type only once. The returned func closes
// the agent connection and must be called once the handshake is over.
func authMethods(a Auth) ([]ssh.AuthMethod, func(), error) {
	var signers []ssh.Signer
	if a.PrivateKey != "" || a.PrivateKeyFile != "" {
		s, err := parseKey(a)
		if err != nil {
			return nil, nil, err
		}
		signers = append(signers, s)
	}
	closeAgent := func() {}
	var agentClient agent.ExtendedAgent
	if a.Agent {
		socket := a.AgentSocket
		if socket == "" {
			socket = os.Getenv("SSH_AUTH_SOCK")
		}
		if socket == "" {
			return nil, nil, errors.New("ssh-agent authentication is enabled but SSH_AUTH_SOCK is not set: start an agent (eval $(ssh-agent); ssh-add) or configure a key")
		}
		conn, err := net.Dial("unix", socket)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to ssh-agent at %s: %w", socket, err)
		}
		closeAgent = func() { _ = conn.Close() } //nolint:errcheck // nothing to do about a failed close of a finished agent conversation.
		agentClient = agent.NewClient(conn)
	}

	var methods []ssh.AuthMethod
	if len(signers) > 0 || agentClient != nil {
		methods = append(methods, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			all := append([]ssh.Signer(nil), signers...)
			if agentClient != nil {
				fromAgent, err := agentClient.Signers()
				if err != nil {
					return nil, fmt.Errorf("listing ssh-agent keys: %w", err)
				}
				all = append(all, fromAgent...)
			}
			return all, nil
		}))
	}
	if a.Password != "" {
		password := a.Password
		methods = append(methods,
			ssh.Password(password),
			// Servers that check passwords through PAM ask for them with keyboard-interactive.
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i, q := range questions {
					if !strings.Contains(strings.ToLower(q), "password") {
						return nil, fmt.Errorf("the server asks %q, which a password cannot answer", q)
					}
					answers[i] = password
				}
				return answers, nil
			}))
	}
	return methods, closeAgent, nil
}

// parseKey parses the inline key or reads the key file, decrypting it with the passphrase.
func parseKey(a Auth) (ssh.Signer, error) {
	pem, what := []byte(a.PrivateKey), "the inline private key"
	if a.PrivateKeyFile != "" {
		path, err := expandHome(a.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("private key file: %w", err)
		}
		pem, err = os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading private key file: %w", err)
		}
		what = "private key file " + path
	}
	var signer ssh.Signer
	var err error
	if a.Passphrase != "" {
		signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(a.Passphrase))
		if err != nil {
			// A passphrase given for a key that is not encrypted is harmless.
			if plain, plainErr := ssh.ParsePrivateKey(pem); plainErr == nil {
				return plain, nil
			}
		}
	} else {
		signer, err = ssh.ParsePrivateKey(pem)
	}
	var missing *ssh.PassphraseMissingError
	switch {
	case err == nil:
		return signer, nil
	case errors.As(err, &missing):
		return nil, fmt.Errorf("%s is encrypted: set its passphrase", what)
	case a.Passphrase != "":
		return nil, fmt.Errorf("decrypting %s (is the passphrase right?): %w", what, err)
	default:
		return nil, fmt.Errorf("parsing %s (want a PEM or OpenSSH private key): %w", what, err)
	}
}
