package backend

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Backend types.
const (
	typeLonghorn = "longhorn"
	typeOpenEBS  = "openebs"
)

// engine is what the resource knows about one backend type: where its chart comes from by
// default, which chart versions it can map typed settings onto, and the pinned default version.
type engine struct {
	Name        string
	Repository  string
	Chart       string
	Namespace   string
	ReleaseName string
	// Version is the pinned default chart version.
	Version string
	// Supported lists the version ranges whose value keys the provider maps (semver
	// constraints, checked in order) and how each is described in errors and docs.
	Supported []versionRange
}

type versionRange struct {
	Constraint  string
	Description string
}

var engines = map[string]engine{
	typeLonghorn: {
		Name:        typeLonghorn,
		Repository:  "https://charts.longhorn.io",
		Chart:       "longhorn",
		Namespace:   "longhorn-system",
		ReleaseName: "longhorn",
		Version:     "1.8.1",
		Supported:   []versionRange{{Constraint: ">= 1.7.0-0, < 1.9.0-0", Description: "1.7.x and 1.8.x"}},
	},
	typeOpenEBS: {
		Name:        typeOpenEBS,
		Repository:  "https://openebs.github.io/openebs",
		Chart:       "openebs",
		Namespace:   "openebs",
		ReleaseName: "openebs",
		Version:     "4.3.0",
		Supported: []versionRange{
			{Constraint: ">= 4.0.0-0, < 4.1.0-0", Description: "4.0.x (engine toggles `mayastor.enabled`, `lvm-localpv.enabled`, `zfs-localpv.enabled`)"},
			{Constraint: ">= 4.1.0-0, < 4.6.0-0", Description: "4.1.x to 4.5.x (engine toggles under `engines.*`, loki and alloy add-ons)"},
		},
	},
}

// supportedText says which versions of the engine's chart are supported.
func (e engine) supportedText() string {
	parts := make([]string, 0, len(e.Supported))
	for _, r := range e.Supported {
		parts = append(parts, r.Description)
	}
	return strings.Join(parts, "; ")
}

// layout returns the index of the supported range that version falls in, or an error that says
// which versions are supported.
func (e engine) layout(version string) (int, error) {
	v, err := semver.NewVersion(version)
	if err != nil {
		return -1, fmt.Errorf("%s chart version %q is not a semantic version", e.Name, version)
	}
	for i, r := range e.Supported {
		c, err := semver.NewConstraint(r.Constraint)
		if err != nil {
			return -1, err
		}
		if c.Check(v) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%s chart version %s is not supported: the provider maps its typed settings onto the value keys of %s charts %s. "+
		"Choose a supported version (default: %s)", e.Name, version, e.Name, e.supportedText(), e.Version)
}

// isExactVersion reports whether v names one version rather than a constraint.
func isExactVersion(v string) bool {
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err == nil
}

// satisfies reports whether version matches constraint (an exact version or a range).
func satisfies(version, constraint string) bool {
	if constraint == "" {
		return true
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return version == constraint
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return version == constraint
	}
	return c.Check(v)
}

// lookupPath walks a dotted value path ("a.b.c") in a values tree.
func lookupPath(values map[string]any, key string) (any, bool) {
	cur := values
	parts := strings.Split(key, ".")
	for i, p := range parts {
		v, ok := cur[p]
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return v, true
		}
		next, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return nil, false
}

func lookupBool(values map[string]any, key string, def bool) bool {
	v, ok := lookupPath(values, key)
	if !ok {
		return def
	}
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return t == "true"
	}
	return def
}

func lookupString(values map[string]any, key, def string) string {
	v, ok := lookupPath(values, key)
	if !ok || v == nil {
		return def
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return def
		}
		return s
	}
	return fmt.Sprint(v)
}

func lookupInt(values map[string]any, key string, def int64) int64 {
	v, ok := lookupPath(values, key)
	if !ok || v == nil {
		return def
	}
	switch t := v.(type) {
	case float64:
		return int64(t)
	case int:
		return int64(t)
	case int64:
		return t
	case string:
		var n int64
		if _, err := fmt.Sscan(t, &n); err == nil {
			return n
		}
	}
	return def
}
