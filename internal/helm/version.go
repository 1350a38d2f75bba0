package helm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"

	"github.com/Masterminds/semver/v3"
)

func isExactVersion(v string) bool {
	_, err := semver.StrictNewVersion(v)
	return err == nil
}

// pickVersion returns the newest version in tags that satisfies constraint;
// an empty constraint accepts stable versions only, like helm.
func pickVersion(tags []string, constraint string) (string, error) {
	var c *semver.Constraints
	if constraint != "" {
		var err error
		c, err = semver.NewConstraint(constraint)
		if err != nil {
			return "", fmt.Errorf("invalid version constraint %q: %w", constraint, err)
		}
	}
	var versions []*semver.Version
	for _, t := range tags {
		v, err := semver.NewVersion(t)
		if err != nil {
			continue
		}
		if c == nil && v.Prerelease() != "" {
			continue
		}
		if c != nil && !c.Check(v) {
			continue
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		if constraint == "" {
			return "", errors.New("no stable version found")
		}
		return "", fmt.Errorf("no version matches %q", constraint)
	}
	sort.Sort(sort.Reverse(semver.Collection(versions)))
	return versions[0].Original(), nil
}

func registryHTTPClient(src Source) (*http.Client, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: src.Insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // the user asked for it
	if src.CAFile != "" {
		pem, err := os.ReadFile(src.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", src.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if src.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(src.CertFile, src.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading client certificate %s and key %s: %w", src.CertFile, src.KeyFile, err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{}
	if def, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = def.Clone()
	}
	tr.TLSClientConfig = tlsConfig
	tr.Proxy = http.ProxyFromEnvironment
	return &http.Client{Transport: tr}, nil
}
