package helm

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// Set is one `--set`-style entry: Name is a Helm value path ("a.b[0].c",
// with `\.` for a literal dot), Value its value. With String the value is
// always a string (`--set-string`); otherwise "true", "false", "null" and
// integers are typed as helm does. A Sensitive value is never printed: errors
// and contradictions show "(sensitive value)" in its place. Attribute names the
// configuration attribute it came from in messages (default: "set", or
// "set_sensitive" when Sensitive).
type Set struct {
	Name      string
	Value     string
	String    bool
	Sensitive bool
	Attribute string
}

// attribute is the configuration attribute the entry came from, for messages.
func (s Set) attribute() string {
	switch {
	case s.Attribute != "":
		return s.Attribute
	case s.Sensitive:
		return "set_sensitive"
	default:
		return "set"
	}
}

// shown is the value as errors may print it.
func (s Set) shown() string {
	if s.Sensitive {
		return "(sensitive value)"
	}
	return fmt.Sprintf("%q", s.Value)
}

// escapeSetValue escapes the characters strvals treats specially in a value.
func escapeSetValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `,`, `\,`)
	return r.Replace(v)
}

// MergeValues builds the values passed to Helm from, in increasing priority:
// typed, the settings the provider derived from typed attributes, keyed by
// dotted value paths ("persistence.defaultClassReplicaCount"); docs, the
// user's raw values documents, each merged over the ones before it (like
// repeated `helm -f`); and sets, the user's set entries, in order. Maps merge
// key by key; anything else is replaced by the later source.
func MergeValues(typed map[string]any, docs []string, sets []Set) (map[string]any, error) {
	out, err := expandTyped(typed)
	if err != nil {
		return nil, err
	}
	for i, doc := range docs {
		user, err := parseUserYAML(i, doc)
		if err != nil {
			return nil, err
		}
		out = mergeMaps(out, user)
	}
	if err := applySets(out, sets); err != nil {
		return nil, err
	}
	return out, nil
}

// parseUserYAML parses values document i. An empty document is an empty map.
func parseUserYAML(i int, doc string) (map[string]any, error) {
	user := map[string]any{}
	if strings.TrimSpace(doc) == "" {
		return user, nil
	}
	if err := yaml.Unmarshal([]byte(doc), &user); err != nil {
		return nil, fmt.Errorf("values[%d] is not a YAML mapping: %w", i, err)
	}
	if user == nil {
		user = map[string]any{}
	}
	return user, nil
}

// checkSetName checks a value path as `helm --set` takes it: keys separated by dots (a dot in a key
// escaped as \.), each key followed by any number of list indexes [N]. Helm 4's parser drops an
// entry with an unclosed bracket ("a[=1") without an error, so a malformed path would silently
// set nothing.
func checkSetName(name string) error {
	key := false // a key, or a key's index, was read since the last dot
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '\\':
			i++ // the next byte is part of the key
			key = true
		case '.':
			if !key {
				return fmt.Errorf("empty key at byte %d: a value path is keys separated by dots, e.g. a.b[0].c", i)
			}
			key = false
		case '[':
			j := i + 1
			for j < len(name) && name[j] >= '0' && name[j] <= '9' {
				j++
			}
			if !key || j == i+1 || j == len(name) || name[j] != ']' {
				return fmt.Errorf("a list index must follow a key and be a number in brackets, e.g. a[0] (byte %d)", i)
			}
			if j+1 < len(name) && name[j+1] != '.' && name[j+1] != '[' {
				return fmt.Errorf("a list index must be followed by a dot, another index or the end (byte %d)", j+1)
			}
			i = j
		case ']':
			return fmt.Errorf("unmatched ] at byte %d", i)
		default:
			key = true
		}
	}
	if !key {
		return errors.New("the value path ends without a key")
	}
	return nil
}

func applySets(dst map[string]any, sets []Set) error {
	for _, s := range sets {
		if s.Name == "" {
			return fmt.Errorf("set entry with value %s has no name", s.shown())
		}
		if err := checkSetName(s.Name); err != nil {
			return fmt.Errorf("%s %q: %w", s.attribute(), s.Name, err)
		}
		entry := s.Name + "=" + escapeSetValue(s.Value)
		var err error
		if s.String {
			err = strvals.ParseIntoString(entry, dst)
		} else {
			err = strvals.ParseInto(entry, dst)
		}
		if err != nil {
			if s.Sensitive {
				// strvals errors quote the entry, value included.
				return fmt.Errorf("%s %q: the value path or value cannot be parsed", s.attribute(), s.Name)
			}
			return fmt.Errorf("%s %q: %w", s.attribute(), s.Name, err)
		}
	}
	return nil
}

// expandTyped turns {"a.b": 1} into {"a": {"b": 1}}. A key may also be a
// plain map value; both forms merge.
func expandTyped(typed map[string]any) (map[string]any, error) {
	out := map[string]any{}
	keys := make([]string, 0, len(typed))
	for k := range typed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := splitPath(k)
		if len(path) == 0 {
			return nil, fmt.Errorf("empty typed value key")
		}
		cur := out
		for i, p := range path {
			if i == len(path)-1 {
				v := typed[k]
				if m, ok := v.(map[string]any); ok {
					if existing, ok := cur[p].(map[string]any); ok {
						cur[p] = mergeMaps(existing, deepCopyMap(m))
						continue
					}
					v = deepCopyMap(m)
				}
				cur[p] = v
				continue
			}
			next, ok := cur[p].(map[string]any)
			if !ok {
				if _, taken := cur[p]; taken {
					return nil, fmt.Errorf("typed value keys %q and %q conflict", strings.Join(path[:i+1], "."), k)
				}
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
	}
	return out, nil
}

// splitPath splits a dotted value path; `\.` is a literal dot.
func splitPath(key string) []string {
	var (
		parts []string
		b     strings.Builder
	)
	for i := 0; i < len(key); i++ {
		switch {
		case key[i] == '\\' && i+1 < len(key) && key[i+1] == '.':
			b.WriteByte('.')
			i++
		case key[i] == '.':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(key[i])
		}
	}
	parts = append(parts, b.String())
	for _, p := range parts {
		if p == "" {
			return nil
		}
	}
	return parts
}

// mergeMaps merges src into dst (src wins) and returns dst.
func mergeMaps(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeMaps(dm, sm)
				continue
			}
			dst[k] = deepCopyMap(sm)
			continue
		}
		dst[k] = v
	}
	return dst
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		l := make([]any, len(t))
		for i := range t {
			l[i] = deepCopyValue(t[i])
		}
		return l
	default:
		return v
	}
}

// Contradiction is a raw value (from the user's YAML or a set entry) that
// overrides a typed setting with something else.
type Contradiction struct {
	// Key is the typed value path that is contradicted.
	Key string
	// Typed is the value the typed setting asks for.
	Typed any
	// Raw is what the raw source sets at Key (nil when it deletes it or
	// replaces a parent with a non-map).
	Raw any
	// Source is "values[<i>]" for a YAML document, else the set entry's
	// attribute and name: "set[<name>]", "set_sensitive[<name>]", "set_wo[<name>]".
	Source string
	// Sensitive hides Raw when printed.
	Sensitive bool
}

func (c Contradiction) String() string {
	raw := render(c.Raw)
	if c.Sensitive {
		raw = "(sensitive value)"
	}
	return fmt.Sprintf("%s sets %s to %s, but the typed setting asks for %s", c.Source, c.Key, raw, render(c.Typed))
}

func render(v any) string {
	if v == nil {
		return "null"
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}

// Contradictions reports every typed key whose value one of the user's YAML
// documents or set entries changes. Equal values written differently (3 and
// "3", true and "true") are not contradictions. It is pure: no cluster, no
// chart.
func Contradictions(typed map[string]any, docs []string, sets []Set) ([]Contradiction, error) {
	keys := make([]string, 0, len(typed))
	for k := range typed {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var out []Contradiction
	check := func(source string, sensitive bool, tree map[string]any) {
		for _, k := range keys {
			path := splitPath(k)
			raw, present := lookup(tree, path)
			if !present {
				continue
			}
			if !sameValue(typed[k], raw) {
				out = append(out, Contradiction{Key: k, Typed: typed[k], Raw: raw, Source: source, Sensitive: sensitive})
			}
		}
	}
	for i, doc := range docs {
		user, err := parseUserYAML(i, doc)
		if err != nil {
			return nil, err
		}
		check(fmt.Sprintf("values[%d]", i), false, user)
	}
	for _, s := range sets {
		tree := map[string]any{}
		if err := applySets(tree, []Set{s}); err != nil {
			return nil, err
		}
		check(s.attribute()+"["+s.Name+"]", s.Sensitive, tree)
	}
	return out, nil
}

// lookup walks path in tree. present is true when the tree sets the path or
// overrides one of its parents with a non-map (which drops the typed value).
func lookup(tree map[string]any, path []string) (any, bool) {
	cur := tree
	for i, p := range path {
		v, ok := cur[p]
		if !ok {
			return nil, false
		}
		if i == len(path)-1 {
			return v, true
		}
		next, ok := v.(map[string]any)
		if !ok {
			return v, true
		}
		cur = next
	}
	return nil, false
}

// sameValue compares a typed value with a raw one, treating numbers by
// value and scalars by their text.
func sameValue(typed, raw any) bool {
	if tm, ok := typed.(map[string]any); ok {
		rm, ok := raw.(map[string]any)
		if !ok {
			return false
		}
		for k, tv := range tm {
			rv, ok := rm[k]
			if ok && !sameValue(tv, rv) {
				return false
			}
		}
		return true
	}
	if ts, ok := scalarText(typed); ok {
		if rs, ok := scalarText(raw); ok {
			return ts == rs
		}
		return false
	}
	return reflect.DeepEqual(normalize(typed), normalize(raw))
}

func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "null", true
	case string:
		if f, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "xXeE_") {
			return numText(f), true
		}
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return numText(float64(t)), true
	case int32:
		return numText(float64(t)), true
	case int64:
		return numText(float64(t)), true
	case uint64:
		return numText(float64(t)), true
	case float32:
		return numText(float64(t)), true
	case float64:
		return numText(t), true
	}
	return "", false
}

func numText(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func normalize(v any) any {
	switch t := v.(type) {
	case []any:
		l := make([]any, len(t))
		for i := range t {
			l[i] = normalize(t[i])
		}
		return l
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = normalize(x)
		}
		return m
	}
	if s, ok := scalarText(v); ok {
		return s
	}
	return v
}

// MaskPaths returns a copy of values with every value path in names set to the same placeholder:
// two releases' values compared after masking the same paths differ only elsewhere. Write-only
// entries (set_wo) are masked this way, since state does not hold their values.
func MaskPaths(values map[string]any, names []string) (map[string]any, error) {
	out, err := deepCopy(values)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := checkSetName(name); err != nil {
			return nil, fmt.Errorf("value path %q: %w", name, err)
		}
		if err := strvals.ParseIntoString(name+"=(write-only)", out); err != nil {
			return nil, fmt.Errorf("value path %q: %w", name, err)
		}
	}
	return out, nil
}

// deepCopy copies a values tree (maps, lists and scalars, as YAML or JSON decode them).
func deepCopy(values map[string]any) (map[string]any, error) {
	b, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
